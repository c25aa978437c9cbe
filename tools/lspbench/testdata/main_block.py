if __name__ == "__main__":
    model = build_model().cuda()
    loader = DataLoader(TypedSet("data"), batch_size=32, num_workers=4)
    losses = []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        losses.append(loss)
    train_epoch(model, loader, optimizer)
    print(len(losses))


