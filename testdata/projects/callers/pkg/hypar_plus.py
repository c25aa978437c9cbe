from pkg.hypar import HypAR


class HypARPlus(HypAR):
    def inference(self, val_loader):
        # An override handing over to its base: that call runs as the
        # override's own callers run it.
        return HypAR.inference(self, val_loader)
