"""Solutions of lesson 16's exercise (PyTorch): the capstone's job, made steady.
`gc.solution("16.1")` prints it; the tests run it in the notebook's place."""

# %% exercise 16.1
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())   # >>> the process's threads
cfg = gc.Experiment(name="capstone", model=SIZES.network if gc.gpu_count() else SIZES.cpu_network,
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    num_workers=0, data_on_gpu=True, **SIZES)   # >>> lesson 9: decoded once, cut and augmented on the device
net, train_iter, val_iter, optimizer = parts = gc.build(cfg)
device = parts.devices[0]
model = net                                        # >>> fed, the wide network keeps a GPU busy as it is
losses = []
with gc.record(parts, net=model, verbose=False) as rec:
    for epoch in rec.epochs():
        net.train()
        for x, y in rec.batches(train_iter):
            x, y = x.to(device), y.to(device)      # >>> the batch to the device
            out = model(x)                         # >>>
            loss = F.cross_entropy(out, y)         # >>>
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            # lesson 13: no loss.item() a step  # >>> rec.step keeps the loss on the device, read once an epoch
            rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
        rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None,
                      evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
run = rec.run
