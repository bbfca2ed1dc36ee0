"""Sentiment of short reviews: a bag of words and bigrams into a small MLP (PyTorch).

A plain training script, as people write them; lesson 17 watches it unchanged:
    gpu-course watch -- python text_job.py --examples 20000
"""
import argparse
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

WORDS = ("good great fine bad awful poor plot actor scene movie film story ending music "
         "slow fast long short funny dull loved hated the a and but not very").split()
BUCKETS = 2 ** 12   # hashed word and bigram ids
LENGTH = 96         # tokens a review, padded or cut


class Reviews(Dataset):
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
        return torch.tensor(ids + [0] * (LENGTH - len(ids))), self.labels[i]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(BUCKETS, 64)
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))

    def forward(self, ids):
        return self.mlp(self.embed(ids))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    net = Model().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loader = DataLoader(Reviews(args.examples), batch_size=64, shuffle=True,
                        num_workers=args.workers)
    for epoch in range(args.epochs):
        for ids, labels in loader:
            loss = nn.functional.cross_entropy(net(ids.to(device)), labels.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
