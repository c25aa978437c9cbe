from chem.heads import BaseHead


class FCOSHead(BaseHead):
    """A module through a library's BaseModule: its loop over feature
    levels is one forward pass."""

    def forward_levels(self, feats):
        outs = []
        for x in feats:
            outs.append(self.encoder(x))
        self.level_outputs = outs
