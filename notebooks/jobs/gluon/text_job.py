"""Sentiment of short reviews: a bag of words and bigrams into a small MLP (Gluon).

A plain training script, as people write them; lesson 17 watches it unchanged:
    gpu-course watch -- python text_job.py --examples 20000
"""
import argparse
import random

import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

WORDS = ("good great fine bad awful poor plot actor scene movie film story ending music "
         "slow fast long short funny dull loved hated the a and but not very").split()
BUCKETS = 2 ** 12   # hashed word and bigram ids
LENGTH = 96         # tokens a review, padded or cut


class Reviews(gluon.data.Dataset):
    """Generated reviews, tokenized in __getitem__ (in Python, every epoch)."""

    def __init__(self, n, seed=0):
        rng = random.Random(seed)
        self.texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 80)))
                      for _ in range(n)]
        self.labels = [int(t.count("good") + t.count("great") > t.count("bad") + t.count("awful"))
                       for t in self.texts]

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        words = self.texts[i].lower().split()
        grams = words + [a + "_" + b for a, b in zip(words, words[1:])]
        ids = [sum(ord(c) * 31 ** k for k, c in enumerate(g)) % BUCKETS for g in grams][:LENGTH]
        return nd.array(ids + [0] * (LENGTH - len(ids))), self.labels[i]


class Model(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(BUCKETS, 64)
        self.hidden = nn.Dense(128, activation="relu")
        self.output = nn.Dense(2)

    def hybrid_forward(self, F, ids):
        return self.output(self.hidden(self.embed(ids).mean(axis=1)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    ctx = mx.gpu() if mx.context.num_gpus() else mx.cpu()
    net = Model()
    net.initialize(ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    loader = gluon.data.DataLoader(Reviews(args.examples), batch_size=64, shuffle=True,
                                   num_workers=args.workers)
    for epoch in range(args.epochs):
        for ids, labels in loader:
            with autograd.record():
                loss = loss_fn(net(ids.as_in_context(ctx)), labels.as_in_context(ctx))
            loss.backward()
            trainer.step(ids.shape[0])
        print(f"epoch {epoch}: loss {loss.mean().asscalar():.3f}")


if __name__ == "__main__":
    main()
