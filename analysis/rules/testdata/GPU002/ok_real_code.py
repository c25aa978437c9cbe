# Containers that do not outlive a training or evaluation step, written
# after the shapes that were reported falsely on real projects.
import multiprocessing

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F


class Pyramid(nn.Module):
    def __init__(self, dims):
        super().__init__()
        # Building layers in __init__: modules, not outputs.
        blocks = []
        for d in dims:
            blocks.append(nn.Linear(d, d))
        self.blocks = nn.ModuleList(blocks)
        self.heads = nn.ModuleList([nn.Linear(d, 1) for d in dims])

    def forward_features(self, x):
        # Per-level outputs, returned with the step's result.
        feats = []
        for block in self.blocks:
            x = block(x)
            feats.append(x)
        return feats

    def forward(self, x):
        outs = []
        for level, feat in enumerate(self.forward_features(x)):
            outs.append(self.heads[level](feat))
        return torch.cat(outs, dim=1)


class CellRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)

    def forward(self, x, h):
        # A loop over time steps inside forward: the hidden states are the
        # output of this one step.
        hiddens = []
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            hiddens.append(h)
        return torch.stack(hiddens, dim=1)


class MultiTermLoss:
    def __init__(self):
        self.criterion = nn.MSELoss()

    def __call__(self, preds, targets):
        # Loss terms in a dict, summed and returned.
        terms = {}
        for i, (p, t) in enumerate(zip(preds, targets)):
            terms[f"level{i}"] = self.criterion(p, t)
        return sum(terms.values())


def chunked_loss(model, x, y, chunk):
    # Mini-batch losses summed for one backward by the caller.
    criterion = nn.CrossEntropyLoss()
    losses = []
    for b in range(0, x.shape[0], chunk):
        losses.append(criterion(model(x[b : b + chunk]), y[b : b + chunk]))
    return sum(losses)


def build_mlp(sizes, act_layer=nn.ReLU):
    # Constructors called in a loop: layers, not forward passes.
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        layers.append(act_layer(inplace=True))
    return nn.Sequential(*layers)


def make_ensemble(n):
    models, optimizers = [], []
    for seed in range(n):
        torch.manual_seed(seed)
        net = Pyramid([8, 8])
        models.append(net)
        optimizers.append(torch.optim.Adam(net.parameters()))
    return models, optimizers


def start_workers(n):
    procs = []
    for rank in range(n):
        p = torch.multiprocessing.Process(target=print, args=(rank,))
        p.start()
        procs.append(p)
    return procs


def fill_preallocated(model, xs):
    # Slice writes into a preallocated tensor of the right size.
    out = torch.empty(len(xs), 1)
    for i, x in enumerate(xs):
        out[i] = model(x)
    return out


def batched_forward(model, data, batch_size):
    # A helper that runs a model over chunks and returns the concatenation:
    # the caller decides whether it needs the graph.
    out_list = []
    for batch_idx in range(0, len(data), batch_size):
        out_list.append(model(data[batch_idx : batch_idx + batch_size]))
    return torch.cat(out_list)


class Accumulator:
    """Sums floats: add() converts what it is given."""

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]


def train_epoch(net, loader, optimizer, accelerator):
    metric = Accumulator(2)
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metric.add(loss, x.shape[0])
    return metric.data[0] / metric.data[1]


def accumulate_then_backward(ddp_model, loader, accelerator):
    # Losses kept to be backpropagated one by one afterwards.
    losses = []
    for x, y in loader:
        losses.append(F.mse_loss(ddp_model(x), y))
    for loss in losses:
        accelerator.backward(loss)


def detached_metrics(model, loader):
    criterion = nn.MSELoss()
    history = []
    for x, y in loader:
        pred = model(x)
        history.append(criterion(pred.detach().cpu(), y.cpu()))
    return history


def tokenize(tokenizer, texts, device):
    tokenized = tokenizer(texts, return_tensors="pt")
    for name in tokenized:
        tokenized[name] = tokenized[name].to(device)
    return tokenized


def scan_files(paths, encoder):
    samples = []
    for path in paths:
        with open(path) as f:
            for row in f:
                samples.append((encoder(row.strip()), torch.tensor(0)))
    return samples


def spawn_pool():
    return [multiprocessing.Process(target=print) for _ in range(2)]


def continual(model, scenario, strategy, x_test):
    # One entry per experience (task), not per training step.
    task_outputs = []
    for i, experience in enumerate(scenario.train_stream):
        strategy.train(experience)
        task_outputs.append(model.forward(x_test).to("cpu"))
    return task_outputs


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8)

    def get_representation(self, chunks, hidden):
        # A module splitting one input into batches.
        batches = [c for c in chunks]
        output_parts = []
        for batch in batches:
            out, hidden = self.rnn(batch, hidden)
            output_parts.append(out)
        return torch.cat(output_parts)


class CenterPrior(nn.Module):
    def forward(self, points):
        return points.sigmoid()


class AutoHead(FCOSHead):
    # A detection head (its base is named like one) computing targets per
    # image: per-image lists, not per training step.
    def __init__(self):
        super().__init__()
        self.center_prior = CenterPrior()

    def loss_by_feat(self, gts, masks):
        weights = []
        for gt, mask in zip(gts, masks):
            w = self.center_prior(gt * mask)
            weights.append(w)
        return torch.cat(weights)


class CorefScorer:
    # Not a module: a class that runs its scorers on one document, in
    # chunks, and returns the joined scores in a result object for the loss.
    def __init__(self):
        self.a_scorer = nn.Linear(8, 1)

    def run(self, words, batch_size):
        scores = []
        for i in range(0, len(words), batch_size):
            scores.append(self.a_scorer(words[i:i + batch_size]))
        res = Result()
        res.coref_scores = torch.cat(scores, dim=0)
        return res


def outputs_per_head(model, heads, make_data):
    # One dataset and one batch per head: a loop over configurations.
    outputs = {}
    for head in heads:
        loader = torch.utils.data.DataLoader(make_data(head), batch_size=1)
        batch = next(iter(loader))
        outputs[head] = model(batch)
    for head in heads:
        assert outputs[head].shape[0] == 1


def perplexity(model, data, n_samples, seqlen):
    # The logits come from a no_grad block: the loss of a slice of them
    # has no history.
    nlls = []
    for i in range(n_samples):
        batch = data[:, i * seqlen:(i + 1) * seqlen]
        with torch.no_grad():
            logits = model(batch).logits
        shift_logits = logits[:, :-1, :].contiguous().float()
        loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), batch[:, 1:].reshape(-1))
        nlls.append(loss.float() * seqlen)
    print(torch.exp(torch.stack(nlls).sum() / (n_samples * seqlen)).item())


def resolve_specs(spec_cls, spaces, config):
    # pydantic's model_validate builds a configuration, not a tensor.
    resolved = {}
    for agent_id, space in spaces.items():
        resolved[agent_id] = spec_cls.model_validate({**config, "space": space})
    config["net_config"] = resolved


class Ensemble:
    def __init__(self, task_configs, model_loader):
        # model_loader loads models; it does not run one.
        self.tasks2models = {}
        for tasks, config in task_configs.items():
            self.tasks2models[tasks] = model_loader(config)


class PATEGAN:
    # synthcity: a template of scikit-learn models, one fitted per teacher;
    # the list holds estimators, not tensors.
    def fit(self, X, generator):
        self.teacher_models: list = []
        for tidx in range(self.n_teachers):
            teacher_X = X[tidx]
            g_mb = np.asarray(generator(len(teacher_X)))
            x_comb = np.concatenate((teacher_X, g_mb), axis=0)
            model = self.model_template(**self.model_args)
            model.fit(x_comb, self.labels)
            self.teacher_models.append(model)
        return self


class EmbeddingTrainer:
    # cogdl: a training step called where nothing differentiates runs its
    # own backward; it returns what it trained (arrays here), no graph.
    def train(self, model_w, dataset_w):
        embeddings = []
        for batch in dataset_w.on_train_wrapper():
            embeddings.append(model_w.train_step(batch))
        return embeddings[0]


from optimum.neuron import NeuronModelForCausalLM
from optimum.onnxruntime import ORTModelForSequenceClassification


class CustomNeuronModelForCausalLM(NeuronModelForCausalLM):
    pass


class NeuronLM:
    # lm-eval: a model compiled for AWS Neuron runs outside autograd.
    def __init__(self, path):
        self.model = CustomNeuronModelForCausalLM.from_pretrained(path)
        self.classifier = ORTModelForSequenceClassification.from_pretrained(path)

    def logits(self, chunks, steps):
        res, labels = [], []
        for chunk in chunks:
            outputs = []
            for i in range(1, steps):
                inputs = self.model.prepare_inputs_for_decode(chunk[:, : i + 1])
                outputs.append(self.model.forward(**inputs).logits)
            res.extend(torch.concat(outputs, dim=1).argmax(-1).tolist())
            scores = []
            for i in range(1, steps):
                scores.append(self.classifier(chunk[:, : i + 1]).logits)
            labels.extend(torch.concat(scores).argmax(-1).tolist())
        return res, labels


class FeatureExtractor:
    # modelscope: a network built with its gradients off, run over a
    # DataLoader's batches: no parameter and no input records a graph.
    def __init__(self, device):
        self.device = device
        self.net = None  # built on first use

    def load(self):
        self.net = nn.Sequential(nn.Linear(8, 8)).eval().requires_grad_(False).to(self.device)

    def batch_process(self, dataset):
        loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=8)
        feats = []
        for step, batch in enumerate(loader, 1):
            batch = batch.to(self.device, non_blocking=True)
            feats.append(self.net(batch))
        return torch.cat(feats)


class TiledDecodeMixin:
    # sglang: a VAE's decoder run tile by tile over one latent, the tiles
    # blended into one image: the windows of one input, not batches.
    def tiled_decode(self, z, overlap, tile):
        rows = []
        for i in range(0, z.shape[2], overlap):
            row = []
            for j in range(0, z.shape[-1], overlap):
                piece = z[:, :, i : i + tile, j : j + tile]
                decoded = self.decoder(piece)
                row.append(decoded)
            rows.append(row)
        return self.blend(rows)


from transformers import pipeline


class LanguageClassifier:
    # haystack: a Hugging Face pipeline runs the model under no-grad itself
    # and returns label dicts.
    def __init__(self, model_name):
        self.model = pipeline(task="text-classification", model=model_name)

    def predict(self, batches, documents):
        predictions = []
        for batch in batches:
            batched_prediction = self.model(batch, top_k=1, truncation=True)
            predictions.extend(batched_prediction)
        for prediction, doc in zip(predictions, documents):
            doc.meta["language"] = prediction[0]["label"]
        return documents


def get_wrapped_model(name, devices):
    model_wrapper_class = WRAPPERS[name]
    return model_wrapper_class(name, devices)


class MultiModalEmbedder:
    # haystack: one model per content type, built by a class held in a name
    # (`model_wrapper_class`): models, not a forward pass's outputs.
    def __init__(self, names, devices):
        self.models = {}
        for content_type, name in names.items():
            self.models[content_type] = get_wrapped_model(name, devices)


def tiled_decode_patched(self, z, overlap, frame_batch_size):
    # optimum-habana: a VAE's decode patched in as a function, its sizes
    # unpacked from the latent's shape; each tile's frames in batches.
    batch_size, num_channels, num_frames, height, width = z.shape
    rows = []
    for i in range(0, height, overlap):
        row = []
        num_batches = max(num_frames // frame_batch_size, 1)
        frames = []
        for k in range(num_batches):
            tile = z[:, :, k * frame_batch_size : (k + 1) * frame_batch_size, i : i + overlap]
            frames.append(self.decoder(tile))
        row.append(torch.cat(frames, dim=2))
        rows.append(row)
    return rows


class PPOTrainer:
    # trl's PPO: the model in eval mode (no dropout) for a batched forward
    # pass whose log-probs and values a training step backpropagates.
    def batched_forward_pass(self, model, inputs, fbs):
        model.eval()
        all_logits, all_values = [], []
        for i in range(len(inputs) // fbs):
            logits, _, values = model(inputs[i * fbs : (i + 1) * fbs])
            all_logits.append(logits)
            all_values.append(values)
        return torch.cat(all_logits), torch.cat(all_values)

    def train_minibatch(self, logits, values, returns):
        loss = ((values - returns) ** 2).mean() + logits.mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def step(self, inputs, returns):
        logits, values = self.batched_forward_pass(self.model, inputs, 4)
        self.train_minibatch(logits, values, returns)


class ValueFitter:
    # The same, the caller running the backward pass itself.
    def forward_all(self, inputs, fbs):
        self.critic.eval()
        values = []
        for i in range(len(inputs) // fbs):
            values.append(self.critic(inputs[i * fbs : (i + 1) * fbs]))
        return torch.cat(values)

    def fit(self, inputs, returns):
        values = self.forward_all(inputs, 8)
        ((values - returns) ** 2).mean().backward()


def pooled_inputs(loader):
    # A layer without parameters applied to data: the output carries no
    # history.
    pool = nn.AvgPool2d(2)
    kept = []
    for x, _ in loader:
        kept.append(pool(x))
    print(len(kept))
