"""Solutions of lesson 13's exercises (PyTorch): each section is the exercise cell, solved.
`gc.solution("13.1")` prints one; the tests run each in the notebook's place."""

# %% exercise 13.1
torch.set_num_threads(SIZES.torch_threads or torch.get_num_threads())   # as above
device = gc.try_devices(1)[0][0]
guard = True                 # >>> the guard on: an `if` on the loss every step
prediction = "same"          # >>> on a CPU each operator has run when its call returns: nothing to wait for
mine = []
for checked in (False, True) * SIZES.repeats if guard else ():    # interleaved (nothing until you choose)
    parts = gc.build(gc.Experiment(name=f"exercise: guard {'on' if checked else 'off'}",
                                   pin_memory=device.type == "cuda", **SIZES))
    net, train_iter, _, optimizer = parts
    with gc.record(parts, verbose=False) as rec:
        rec.note(loss_guard=checked)
        for epoch in rec.epochs():
            net.train()
            for x, y in rec.batches(train_iter):
                x, y = gc.to_device(x, y, device)
                out = net(x)
                loss = F.cross_entropy(out, y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                if checked and not torch.isfinite(loss):                 # <- an if on a device value
                    raise FloatingPointError(f"the loss is {loss.item()}")
                rec.step(len(y), loss=loss.detach(), correct=(out.argmax(1) == y).sum())
            rec.end_epoch(sync=torch.cuda.synchronize if device.type == "cuda" else None)
    mine.append(rec.run)
