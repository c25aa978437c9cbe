# Loops in functions named for prediction or evaluation that record no
# graph, or do not iterate data: the shapes real projects reported
# falsely before.
from typing import List

import numpy as np
import torch
import torch.nn as nn


class Ranker:
    # haystack's ranker: the activation, a layer without parameters, runs
    # outside inference mode on scores made inside it.
    def __init__(self, model):
        self.model = model
        self.activation_function = nn.Sigmoid()
        self.dropout = nn.Dropout(0.1)

    def _add_scores(self, scored_docs):
        docs = []
        for raw_score, doc in scored_docs:
            doc.score = self.activation_function(self.dropout(raw_score))[-1].tolist()
            docs.append(doc)
        return docs

    def predict(self, batch, documents):
        with torch.inference_mode():
            preds = self.model(batch)
        result = []
        for pred_group, doc_group in zip(preds, documents):
            result.append(self._add_scores(zip(pred_group, doc_group)))
        return result


class Scorer:
    # The same with a layer without parameters under a model's name.
    def __init__(self, backbone):
        self.backbone = backbone
        self.head = nn.Identity()

    def _scores(self, feats):
        out = []
        for feat in feats:
            out.append(self.head(feat).tolist())
        return out

    def predict(self, batch, groups):
        with torch.no_grad():
            feats = self.backbone(batch)
        result = []
        for feat_group, group in zip(feats, groups):
            result.append(self._scores(zip(feat_group, group)))
        return result


class SSIM(nn.Module):
    def __init__(self, window_size=11):
        super().__init__()
        self.window_size = window_size
        self.register_buffer("window", torch.ones(1, 1, window_size, window_size))

    def forward(self, img1, img2):
        return (img1 - img2).abs().mean()


class FIDScore(nn.Module):
    def __init__(self, feature_net):
        super().__init__()
        self.model = feature_net
        self.activations = []

    def forward(self, pred, target):
        self.activations.append(self.model(pred).detach().cpu())


class InpaintingMetric:
    # modelscope's metric: SSIM and FID of stored, detached predictions.
    def __init__(self, feature_net):
        self.preds, self.targets = [], []
        self.SSIM = SSIM(window_size=11).eval()
        self.FID = FIDScore(feature_net)

    def evaluate(self):
        ssim_list = []
        for pred, target in zip(self.preds, self.targets):
            ssim_list.append(self.SSIM(pred, target))
            self.FID(pred, target)
        return ssim_list


def evaluate_folds(model, model_args, folds, data, labels):
    # synthcity's cross-validation: each fold fits an estimator built from
    # the class passed in.
    scores = []
    for train_idx, test_idx in folds:
        estimator = model(**model_args).fit(data[train_idx], labels[train_idx])
        scores.append(estimator.score(data[test_idx], labels[test_idx]))
    return scores


def inference_mlx(model, audio_batch: torch.Tensor, tokens: List[int]):
    # stable-ts's MLX branch in a PyTorch file: the model is MLX's.
    import mlx.core as mx

    mel_batch = mx.stack([mx.array(a.numpy()) for a in audio_batch], axis=0)
    logits_list = []
    for single_mel in mel_batch:
        logits_list.append(model(single_mel[None], mx.array(tokens)[None]))
    return torch.from_numpy(np.array(mx.concatenate(logits_list, axis=0)))


def predict_tiles(model, image, tile):
    # One input's tiles: a loop along an inner dimension.
    outs = []
    for j in range(0, image.shape[3], tile):
        outs.append(model(image[..., j : j + tile]))
    return torch.cat(outs, dim=-1)


def predict_warmup(model, inp, iters=3):
    # A loop that only counts.
    for _ in range(iters):
        model(inp)
