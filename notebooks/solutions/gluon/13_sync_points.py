"""Solutions of lesson 13's exercises (Gluon): each section is the exercise cell, solved.
`gc.solution("13.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 13.1
device = gc.try_devices(1)[0][0]
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
guard = True                 # >>> the guard on: an `if` on the loss every step
prediction = "slower"        # >>> the host waits for the engine every step, as .asscalar() does
mine = []
for checked in (False, True) * SIZES.repeats if guard else ():    # interleaved (nothing until you choose)
    net = gc.get_model(SIZES.model)
    net.hybridize(static_alloc=True, static_shape=True)
    parts = gc.build(gc.Experiment(name=f"exercise: guard {'on' if checked else 'off'}",
                                   graph="static-alloc", **SIZES), net=net)
    net, train_iter, _, trainer = parts
    with gc.record(parts, verbose=False) as rec:
        rec.note(loss_guard=checked)
        for epoch in rec.epochs():
            for data, label in rec.batches(train_iter):
                data, label = data.as_in_context(device), label.as_in_context(device)
                with autograd.record():
                    out = net(data)
                    loss = loss_fn(out, label)
                loss.backward()
                trainer.step(data.shape[0])
                if checked and not mx.nd.contrib.isfinite(loss.mean()):    # <- an if on an NDArray
                    raise FloatingPointError("the loss is not finite")
                rec.step(data.shape[0], loss_sum=loss.sum(),
                         correct=(out.argmax(axis=1) == label.astype(out.dtype)).sum())
            rec.end_epoch(sync=mx.nd.waitall)
    mine.append(rec.run)
