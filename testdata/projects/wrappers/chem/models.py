class Model(object):
    """The base of every model wrapper: fit, predict, save."""

    def fit(self, dataset):
        raise NotImplementedError
