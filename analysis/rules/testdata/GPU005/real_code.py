# empty_cache() on every batch, in the forms real training code has it.
import torch
import torch.nn.functional as F
from tqdm import tqdm


def reference_logps(model, data_loader):
    logps = []
    for padded_batch in tqdm(iterable=data_loader, desc="reference log probs"):
        with torch.no_grad():
            logps.append(model(padded_batch).cpu())
        torch.cuda.empty_cache()  # want: GPU005
    return logps


def rollout(policy, optimizer, queries, num_updates, micro):
    for update in range(num_updates):
        for i in range(0, queries.shape[0], micro):
            logits = policy(queries[i : i + micro])
            torch.cuda.empty_cache()  # want: GPU005
            logprob = F.log_softmax(logits, dim=-1)
            del logits
            torch.cuda.empty_cache()  # want: GPU005
        loss = -logprob.mean()
        loss.backward()
        optimizer.step()


def segment_images(model, image_paths, load):
    # One image per iteration: the loop feeds the model what it iterates.
    model.eval()
    masks = []
    with torch.no_grad():
        for path in image_paths:
            image = load(path)
            masks.append(model(image).argmax(1).cpu())
            torch.cuda.empty_cache()  # want: GPU005
    return masks


def attacked_forecasts(net, loader, sparsity, perturbation, attack_items):
    # gluonts: two small loops mask a perturbation's entries before each
    # sparsity level's forward; the cache is still emptied per batch and
    # level, not after a phase.
    forecasts = []
    with torch.no_grad():
        for batch in loader:
            for k in sparsity:
                masked = perturbation.clone()
                for idx in range(masked.shape[-1]):
                    if idx not in attack_items:
                        masked[:, :, idx] = 0
                forecasts.append(net(batch * (1 + masked)).cpu().numpy())
                del masked
                torch.cuda.empty_cache()  # want: GPU005
    return forecasts


def encode(blocks, loader):
    # The inner loop runs one batch through blocks the loop iterates: part
    # of the step, not a phase before the call.
    outs = []
    with torch.no_grad():
        for x in loader:
            h = x
            for block in blocks:
                h = block(h)
            outs.append(h.cpu())
            torch.cuda.empty_cache()  # want: GPU005
    return outs


def shifted_views(model, loader, shifts):
    # Emptied after each view of a batch: moved out of the views' loop it
    # would still run once a batch, so the fix only removes it.
    for batch in loader:
        views = []
        for shift in shifts:
            views.append(batch.roll(shift, dims=-1))
            torch.cuda.empty_cache()  # want: GPU005
        model(torch.cat(views))


class ConceptIndex:
    # flair's entity linker: names embedded a batch at a time by an
    # embedding object (no model call by its name), the stride says batch.
    def precompute(self, names, show_progress):
        if show_progress:
            starts = tqdm(range(0, len(names), self.batch_size))
        else:
            starts = range(0, len(names), self.batch_size)
        vectors = []
        for start in starts:
            batch = names[start : start + self.batch_size]
            self.embeddings["dense"].embed(batch)
            vectors.extend(s.get_embedding().cpu() for s in batch)
            torch.cuda.empty_cache()  # want: GPU005
        return vectors

    def query(self, mentions, bs):
        found = []
        for i in range(0, len(mentions), bs):
            found.append(self.lookup(mentions[i : i + bs]))
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # want: GPU005
        return found


def split_batches(model, loader):
    # Emptied before the loop over a batch's parts, which runs the model on
    # each: still once a batch.
    outs = []
    with torch.no_grad():
        for x in loader:
            torch.cuda.empty_cache()  # want: GPU005
            for part in x.split(4):
                outs.append(model(part).cpu())
    return outs


def train_with_validation(model, optimizer, train_loader, val_loader):
    # Emptied at the start of every training step; the validation pass
    # nested in the loop goes over another loader, not one this loop's
    # iteration hands it.
    for step, (x, y) in enumerate(train_loader):
        torch.cuda.empty_cache()  # want: GPU005
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 1000 == 0:
            with torch.no_grad():
                for vx, vy in val_loader:
                    model(vx)
