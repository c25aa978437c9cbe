# Loops in functions named for prediction or evaluation that hand the
# model the data they iterate, not a loader: ART's interval predictions,
# synthcity's survival predictions, deepchem's decoder.
import numpy as np
import torch
import torch.nn as nn


class IntervalClassifier:
    def __init__(self, model):
        self.model = model

    def predict_intervals(self, x_interval, batch_size):
        interval_predictions = []
        num_batches = len(x_interval) // batch_size
        for bnum in range(num_batches):  # want: GPU004
            x_batch = x_interval[batch_size * bnum : batch_size * (bnum + 1)]
            interval_predictions.append(self.model.forward(x_batch))
        return torch.concat(interval_predictions, dim=0).detach().numpy()

    def predict_samples(self, samples):
        results = []
        for sample in samples:  # want: GPU004
            results.append(self.model(torch.as_tensor(sample)).detach().numpy())
        return results


def evaluate_scores(model, items):
    scores = []
    for item in items:  # want: GPU004
        scores.append(model(item).softmax(-1).tolist())
    return scores


class Ranker:
    # As haystack's ranker, with a head that has parameters of its own.
    def __init__(self, model):
        self.model = model
        self.head = nn.Linear(4, 1)

    def _add_scores(self, scored_docs):
        docs = []
        for raw_score, doc in scored_docs:
            doc.score = self.head(raw_score)[-1].tolist()
            docs.append(doc)
        return docs

    def predict(self, batch, documents):
        with torch.inference_mode():
            preds = self.model(batch)
        result = []
        for pred_group, doc_group in zip(preds, documents):  # want: GPU004
            result.append(self._add_scores(zip(pred_group, doc_group)))
        return result
