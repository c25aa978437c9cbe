import torch


def pad_batch(samples):
    batch = torch.stack(samples)
    return batch.cuda()


def unused_helper(samples):
    return torch.stack(samples).cuda()
