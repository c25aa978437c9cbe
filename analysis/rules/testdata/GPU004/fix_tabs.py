import torch as T

model = T.nn.Linear(2, 2)
val_batches = [T.randn(1, 2)]
model.eval()
for x in val_batches:  # want: GPU004
	doc = """A note
that spans lines
"""

	out = model(x)
	print(doc, out)
