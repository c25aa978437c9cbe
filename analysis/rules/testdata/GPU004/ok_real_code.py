# Loops that do not run the model with autograd on, or are not evaluation.
from mypkg.utils import *  # brings torch in

model = build_model()
model.eval()


def extract_from_model(m):
    return {"n_params": sum(p.numel() for p in m.parameters())}


def report(cfg):
    # A loop over dataset names from the configuration.
    results = []
    for dataset_name in cfg.DATASETS.TEST:
        results.append(extract_from_model(model))
    return results


@torch.no_grad()
def evaluate_star(val_loader):
    # torch came through a star import; no_grad still counts.
    for x, y in val_loader:
        model(x)


def infer_model(m, rows):
    with torch.no_grad():
        out = m(rows)
    return out.cpu().numpy()


def predict_frames(val_loader):
    model.eval()
    frames = []
    for x in val_loader:
        frames.append(infer_model(model, x))
    return frames


def evaluate_inner(val_loader):
    model.eval()
    for x, y in val_loader:
        model(x)


def main(val_loader):
    # Every call of evaluate_inner runs under no_grad.
    with torch.no_grad():
        evaluate_inner(val_loader)
    with torch.inference_mode():
        evaluate_inner(val_loader)


@smart_inference_mode()
def validate(val_loader):
    model.eval()
    for x, y in val_loader:
        model(x)


def export(im):
    model.eval()
    for p in model.parameters():
        p.requires_grad = False
    for _ in range(2):
        y = model(im)  # dry runs of a frozen model
    return y


def lr_find(val_iter):
    with eval_mode(model):
        for inputs, labels in val_iter:
            model(inputs)


class CheckpointTest:
    def _update_model(self, generator):
        x, y = next(generator)
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return float(loss)

    def run(self, generator, val_losses):
        # `val_losses` holds numbers, and the loop trains through a helper.
        model.eval()
        for epoch, val_loss in enumerate(val_losses, 1):
            self._update_model(generator)
            model(torch.zeros(1, 8))


def receptive_field(chunk_length):
    # A probe of the model over a few inputs after eval(), not a loop over
    # batches or steps.
    model.eval()
    x = torch.zeros(1, chunk_length, 1)
    for i in range(chunk_length):
        x[0, i, 0] = 1
        out = model(x)


def test_shapes(loader):
    # pytest's test_* functions are tests, not evaluation.
    for x, y in loader:
        assert model(x).shape == (4, 2)


def evaluate_init(guide, val_loader):
    # Runs once: the loop only fetches a first batch.
    for batch in val_loader:
        model(batch)
        break


class Fitter:
    @contextlib.contextmanager
    def _set_training_mode(self, training):
        old = model.training
        model.train(training)
        with torch.set_grad_enabled(training):
            yield
        model.train(old)

    def evaluate(self, val_loader):
        with self._set_training_mode(False):
            for x, y in val_loader:
                model(x)


class PlotCallback(Callback):
    # Lightning runs on_validation_* hooks inside its no-grad evaluation loop.
    def on_validation_epoch_end(self, trainer, pl_module):
        dl = trainer.datamodule.val_dataloader()
        for batch in dl:
            pl_module.model(batch)


from openvino import CompiledModel


def val_fn(nncf_model: CompiledModel, validation_data, metric):
    # anomalib: an OpenVINO model (what the annotation says) records no
    # graph, whatever its name.
    for batch in validation_data:
        out = nncf_model(batch["image"])
        metric.update(out["pred_score"])
    return metric.compute()


def val_fn_deferred(nncf_model: "CompiledModel", validation_data, metric):
    # The same annotation as a forward reference: the string names the
    # imported class.
    for batch in validation_data:
        metric.update(nncf_model(batch["image"])["pred_score"])
    return metric.compute()


def run_generation(model, accelerator, loader, gen_kwargs):
    # parler-tts: unwrap_model hands the model over; generate() turns
    # autograd off itself.
    def generate_step(batch):
        eval_model = accelerator.unwrap_model(model, keep_fp32_wrapper=True)
        return eval_model.generate(**batch, **gen_kwargs)

    model.eval()
    audios = []
    for batch in loader:
        audios.append(generate_step(batch).cpu())
    return audios


import tensorflow as tf


def predict_keras(model_path, loader):
    # A TensorFlow model: PyTorch's autograd never sees it.
    model = tf.keras.models.load_model(model_path)
    preds = []
    for x in loader:
        preds.append(model(x).numpy())
    return preds


class TorchClassifier:
    # sktime: no_grad imported by its dotted name (an optional dependency).
    def predict_proba(self, X):
        self.network.eval()
        dataloader = self._build_dataloader(X)
        y_pred = []
        torchNo_grad = _safe_import("torch.no_grad")
        with torchNo_grad():
            for inputs in dataloader:
                y_pred.append(self.network(**inputs).detach())
        return y_pred

    def predict_quietly(self, X):
        self.network.eval()
        quiet = load_symbol("torch.inference_mode")
        y_pred = []
        with quiet():
            for inputs in self._build_dataloader(X):
                y_pred.append(self.network(**inputs).detach())
        return y_pred


def benchmark_generation_calls(bridge, test_prompts):
    # TransformerLens: text generation (it takes max_new_tokens) turns
    # autograd off itself.
    generator = resolve_text_generator(bridge)
    outputs = []
    for prompt in test_prompts:
        outputs.append(generator(prompt, max_new_tokens=10, temperature=0.7))
    return outputs


class CandidateScorer:
    # modelscope OFA: the decoder scores one input against each group of
    # candidate answers; `val_ans_l` holds answers, not validation data.
    def traverse(self, encoder_out, prompts):
        results = []
        for val_ans, val_masks in zip(self.val_ans_l, self.val_masks_l):
            scores = self.model.decoder(prompts, encoder_out, val_ans)
            results.append(scores.masked_fill(~val_masks, 0))
        return torch.cat(results, dim=-1)


class EngineRunner:
    # A TensorRT engine behind a plain class: calling it records nothing.
    def __init__(self, path):
        self.path = path

    def __call__(self, feeds):
        return feeds


def infer_engine(model: "EngineRunner", images, repeats=1):
    # rfdetr's benchmark: the parameter is annotated with a forward
    # reference to the plain class (and the module binds another `model`).
    timings = []
    for image in images:
        for _ in range(repeats):
            outputs = model({"input": image})
        timings.append(outputs)
    return timings


class ScoreTable:
    # Not a model: its own eval() fills a table; the network it calls is
    # under no mode the class set.
    def eval(self):
        self.rows = []

    def refresh(self, loader):
        self.eval()
        for x in loader:
            self.rows.append(float(self.net(x).mean()))
