import torch

from trainer.loops import fit, gather, validate
from trainer.model import Net
from trainer.scoring import Scorer, predictions

torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(4)]
print([round(v, 4) for v in fit(model, optimizer, loader)])
print(round(validate(model, loader), 4))
print([round(e.item(), 4) for e in gather(model, loader)])
print([round(p.sum().item(), 4) for p in predictions(loader)])
scorer = Scorer()
print(round(float(scorer.total(loader)), 4), round(float(scorer.total_error(loader)), 4))
