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
