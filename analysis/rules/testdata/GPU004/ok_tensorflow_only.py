# A TensorFlow file of a project that also has PyTorch estimators
# (alibi-detect's, ART's, deepchem's): its models record no autograd graph.
import numpy as np
import tensorflow as tf


def predict_batch(x, model, batch_size=32):
    n = x.shape[0]
    n_minibatch = int(np.ceil(n / batch_size))
    preds = []
    for i in range(n_minibatch):
        istart, istop = i * batch_size, min((i + 1) * batch_size, n)
        preds.append(model(x[istart:istop]))
    return np.concatenate(preds)


def evaluate(model, test_dataset):
    model.trainable = False
    accuracy = tf.keras.metrics.Accuracy()
    for x, y in test_dataset:
        accuracy.update_state(y, tf.argmax(model(x), axis=1))
    return accuracy.result()
