# empty_cache() calls that do not run per batch.
import torch


def run_experiments(args, exp_cls):
    # One experiment per iteration; the batch loop is inside train().
    for run in range(args.itr):
        exp = exp_cls(args)
        exp.train(run)
        torch.cuda.empty_cache()


def evaluate_checkpoints(model, paths, loader):
    for ckpt in paths:
        model.load_state_dict(torch.load(ckpt))
        torch.cuda.empty_cache()


def find_batch_size(model, bs):
    # An out-of-memory retry loop: clearing the cache before each try is
    # the point.
    while bs > 0:
        try:
            torch.cuda.empty_cache()
            return model(torch.randn(bs, 8))
        except torch.cuda.OutOfMemoryError:
            bs //= 2


def stream(model, cap, stop_button):
    while cap.isOpened():
        ok, frame = cap.read()
        out = model(frame)
        if stop_button:
            cap.release()
            torch.cuda.empty_cache()
            st.stop()


class Chunked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = torch.nn.Linear(8, 8)

    def forward(self, tokens):
        # Chunks of one forward pass.
        outs = []
        for i in range(0, tokens.shape[0], 4):
            torch.cuda.empty_cache()
            outs.append(self.block(tokens[i : i + 4]))
        return torch.cat(outs)


def label_stats(labels, using_cuda):
    for index in labels:
        if using_cuda:
            torch.cuda.empty_cache()
        print(index)


def tasks(model, strategy, stream, x_test):
    # The enumerate index is a counter, not data fed to the model.
    for i, experience in enumerate(stream):
        strategy.train(experience)
        model(x_test * i)
        torch.cuda.empty_cache()


def tokenize_all(texts):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    for text in texts:
        ids = tokenizer(text)["input_ids"]
        torch.cuda.empty_cache()


def benchmark_backends(bench_one, device):
    # A sweep over configurations written out: each iteration is a whole
    # benchmark, and the cache is emptied between them.
    for backend in ["cudnn", "scan", "pytorch"]:
        for compile_mode in ("default", "max-autotune"):
            try:
                loss = bench_one(backend, compile_mode)
                loss.backward()
            finally:
                torch.cuda.empty_cache()


def bench_one(backend, warmup):
    net = torch.nn.Linear(8, 8).cuda()
    for _ in range(warmup):
        net(torch.randn(4, 8, device="cuda")).sum().backward()
    net(torch.randn(4, 8, device="cuda")).sum().backward()
    return torch.cuda.max_memory_allocated()


def sweep(backends, modes):
    # A sweep: each iteration is a whole benchmark run, which loops over
    # its own steps in bench_one.
    for backend in backends:
        for mode in modes:
            try:
                bench_one(backend, mode)
            finally:
                torch.cuda.empty_cache()


def measure_vram(unet, optimizer, dummy_input):
    # Once, after the first step: not on every iteration.
    for step in range(20):
        optimizer.zero_grad()
        unet(dummy_input).sum().backward()
        optimizer.step()
        if step == 0:
            torch.cuda.empty_cache()


class Potential:
    def train_one_epoch(self, loader):
        for batch in loader:
            self.loss(batch).backward()
            self.optimizer.step()

    def train(self, dataloader, epochs):
        # The data comes in files, each loaded, put in a DataLoader of its
        # own and trained on for an epoch: one call a file.
        for epoch in range(epochs):
            for idx, data_path in enumerate(dataloader):
                data = torch.load(data_path)
                loader = torch.utils.data.DataLoader(data, batch_size=32)
                self.train_one_epoch(loader)
                del loader, data
                torch.cuda.empty_cache()


def check_model_zoo(zoo):
    # A test over a zoo of models: each iteration builds its model and runs
    # one step.
    for name, (model_fn, data_fn, loss_fn) in zoo.items():
        model = model_fn().cuda()
        ddp_model = torch.nn.parallel.DistributedDataParallel(model)
        output = ddp_model(**data_fn())
        loss_fn(output).backward()
        torch.cuda.empty_cache()


def benchmark_batch_sizes(model, sizes, iters):
    # Each batch size is benchmarked in a loop of its own; the cache is
    # emptied between sizes, after the repetitions.
    for batch_size in sizes:
        inp = torch.randn(batch_size, 3, 224, 224, device="cuda")
        for _ in range(iters):
            model(inp)
        torch.cuda.empty_cache()


def run_rounds(model, optimizer, loader, rounds):
    # Each round is a pass over the loader; the cache is emptied once a
    # round, after it.
    for round_idx in range(rounds):
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
        torch.cuda.empty_cache()



def policy_logits(model, responses):
    return model(responses).logits


def ppo_updates(policy, ref_policy, optimizer, queries, num_updates, micro, epochs):
    # trl's PPO: each update rolls out over micro-batches under no_grad,
    # then trains a few epochs on what it gathered, with the same function
    # running the model; the cache is emptied once between the two phases.
    for update in range(num_updates):
        with torch.no_grad():
            ref_logits = []
            for i in range(0, queries.shape[0], micro):
                ref_logits.append(policy_logits(ref_policy, queries[i : i + micro]))
            ref_logits = torch.cat(ref_logits)
        torch.cuda.empty_cache()
        for _ in range(epochs):
            loss = (policy_logits(policy, queries) - ref_logits).pow(2).mean()
            loss.backward()
            optimizer.step()


def sample_actions(policy, states):
    with torch.no_grad():
        return policy(states)


def reinforce(policy, optimizer, envs, updates):
    # The rollout helper runs the policy under no_grad itself: the loop
    # calling it is still a phase, and the cache is emptied once an update,
    # between the rollout and the training.
    for update in range(updates):
        actions = []
        for states in envs:
            actions.append(sample_actions(policy, states))
        torch.cuda.empty_cache()
        policy(torch.stack(actions)).sum().backward()
        optimizer.step()


def attend_in_chunks(q, k, chunk_size):
    # The chunks of one attention: strided by a chunk size, not a batch.
    outs = []
    for start in range(0, q.shape[0], chunk_size):
        outs.append(q[start : start + chunk_size] @ k.T)
        torch.cuda.empty_cache()
    return torch.cat(outs)


def encode_micro_batches(encoder, loader, micro_bs):
    # Emptied after each batch's micro-batches: a phase, as after a nested
    # step loop.
    for batch in loader:
        for start in range(0, len(batch), micro_bs):
            encoder.embed(batch[start : start + micro_bs])
        torch.cuda.empty_cache()


def extract_features(dataloaders, models, devices):
    # One pass of each model over its own loader: the cache is emptied
    # before each model's batch loop (the previous model deleted), once a
    # model, as after it.
    features = []
    for loader, model, device in zip(dataloaders, models, devices):
        torch.cuda.empty_cache()
        model.to(device)
        model.eval()
        per_model = []
        for batch in loader:
            with torch.no_grad():
                per_model.append(model(batch.to(device)).cpu())
        features.append(torch.cat(per_model))
        del model
    return features
