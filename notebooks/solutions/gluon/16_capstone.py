"""Solutions of lesson 16's exercise (Gluon): the capstone's job, made steady.
`gc.solution("16.1")` prints it; the tests run it in the notebook's place."""

# %% exercise 16.1
cfg = gc.Experiment(name="capstone", model=SIZES.network if gc.gpu_count() else SIZES.cpu_network,
                    data_dir=str(l09_input.photo_folder(SIZES.images, FOLDER)),
                    data_format="packed", **SIZES)      # >>> lesson 9: resized once, one RecordIO file
net = gc.get_model(cfg)                            # >>> the network, as written
net.hybridize(static_alloc=True, static_shape=True)   # lesson 3: one graph, not a Python call a layer
from gpu_course.tracks.gluon import recordio       # lesson 9: MXNet's C++ iterator reads, decodes
train_iter = recordio.RecordIter(gc.prepare_data(cfg).path, cfg.batch_size, cfg.image_size,
                                 threads=2, seed=cfg.seed)   # and augments in its own threads
net, train_iter, val_iter, trainer = parts = gc.build(cfg, net=net, train_iter=train_iter)   # >>>
device = parts.devices[0]
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
losses = []
with gc.record(parts, verbose=False) as rec:
    for epoch in rec.epochs():
        for data, label in rec.batches(train_iter):
            data, label = data.as_in_context(device), label.as_in_context(device)   # >>> the batch to the device
            with autograd.record():
                out = net(data)                    # >>>
                loss = loss_fn(out, label)         # >>>
            loss.backward()
            trainer.step(data.shape[0])
            mx.nd.waitall()                        # >>> lesson 13: no copy to the host; on a CPU one wait
                                                   # a step costs nothing, and without it the wait
                                                   # moves into the loader (on a GPU: drop it)
            rec.step(data.shape[0], loss_sum=loss.sum(),
                     correct=(out.argmax(axis=1) == label.astype(out.dtype)).sum())
        rec.end_epoch(sync=mx.nd.waitall, evaluate=lambda: gc.evaluate(net, val_iter, parts.devices))
run = rec.run
