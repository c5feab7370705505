#!/usr/bin/env python3
"""Independent reference of the hashed_ngrams and random_features encoders (docs/ENCODERS.md),
written from the documented rules with Python's own Unicode database, not from the C++ code.
Writes hashed_ngrams_golden.jsonl and random_features_golden.json beside this file, which
server/encoders tests compare against. Run: python3 server/encoders/testdata/make_golden.py
"""
import json
import math
import os

MASK = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    h ^= h >> 33
    return h


def lower(ch: str) -> str:
    low = ch.lower()
    if len(low) == 1:
        return low
    return "i" if ch == "\u0130" else ch


def is_word_char(ch: str) -> bool:
    c = ord(ch)
    if c < 0x80:
        return ch.isascii() and ch.isalnum()
    ranges = [(0xA0, 0xBF), (0xD7, 0xD7), (0xF7, 0xF7), (0x2000, 0x206F), (0x2E00, 0x2E7F),
              (0x3000, 0x303F), (0xFF01, 0xFF0F), (0xFF1A, 0xFF20), (0xFF3B, 0xFF40),
              (0xFF5B, 0xFF65), (0xFEFF, 0xFEFF)]
    return not any(a <= c <= b for a, b in ranges)


def words_of(text: str):
    words, cur = [], []
    for ch in text:
        low = lower(ch)
        if is_word_char(low):
            cur.append(low)
        elif cur:
            words.append("".join(cur))
            cur = []
    if cur:
        words.append("".join(cur))
    return words


def features(text, char_min, char_max, word_ngrams):
    words = words_of(text)
    feats = []
    for i, w in enumerate(words):
        if word_ngrams >= 1:
            feats.append("w:" + w)
        for n in range(2, word_ngrams + 1):
            if i + n <= len(words):
                feats.append("b:" + " ".join(words[i:i + n]))
        if char_max > 0:
            wrapped = "<" + w + ">"
            for n in range(char_min, char_max + 1):
                for s in range(0, len(wrapped) - n + 1):
                    feats.append("c:" + wrapped[s:s + n])
    return feats


def hashed_ngrams(text, dim, char_min=3, char_max=5, word_ngrams=2):
    counts = {}
    for f in features(text, char_min, char_max, word_ngrams):
        counts[f] = counts.get(f, 0) + 1
    vec = [0.0] * dim
    for f, tf in counts.items():
        h = fmix64(fnv1a64(f.encode("utf-8")))
        value = 1.0 + math.log(tf)
        vec[h % dim] += -value if h >> 63 else value
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm > 0 else vec


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53

    def normal(self):
        u1, u2 = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


def random_features(x, dim, gamma, seed):
    rng = SplitMix64(seed)
    sigma = math.sqrt(2.0 * gamma)
    w = [[sigma * rng.normal() for _ in x] for _ in range(dim)]
    b = [2.0 * math.pi * rng.uniform() for _ in range(dim)]
    scale = math.sqrt(2.0 / dim)
    return [scale * math.cos(b[k] + sum(wk * xj for wk, xj in zip(w[k], x))) for k in range(dim)]


TEXTS = [
    ("The quick brown fox jumps over the lazy dog", 64, 3, 5, 2),
    ("the the the THE cat", 32, 3, 5, 2),
    ("Ünïcödé ÀÉÎÕÜ straße ĲSSEL İstanbul", 128, 3, 5, 2),
    ("ΑΘΗΝΑ Ελλάδα ΣΟΦΙΑ — Москва ПРИВЕТ мир", 128, 2, 4, 3),
    ("hello, world! hello... world?", 16, 1, 3, 1),
    ("a", 8, 3, 5, 2),
    ("!!! ??? ...", 8, 3, 5, 2),
    ("日本語のテキスト、と　emoji 🙂🙂 ok", 64, 2, 3, 2),
    ("x1 x2 x3 x4 x5 x6", 64, 3, 5, 0),
    ("word ngrams only here", 64, 3, 0, 2),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "hashed_ngrams_golden.jsonl"), "w", encoding="utf-8") as out:
        for text, dim, cmin, cmax, wn in TEXTS:
            vec = hashed_ngrams(text, dim, cmin, cmax, wn)
            entries = [[i, v] for i, v in enumerate(vec) if v != 0.0]
            out.write(json.dumps({"text": text, "dim": dim, "char_ngram_min": cmin,
                                  "char_ngram_max": cmax, "word_ngrams": wn,
                                  "entries": entries}, ensure_ascii=False) + "\n")
    x = [0.5, -1.25, 2.0]
    z = random_features(x, 16, 0.3, 42)
    with open(os.path.join(here, "random_features_golden.json"), "w") as out:
        json.dump({"x": x, "dim": 16, "gamma": 0.3, "seed": 42, "z": z}, out)
        out.write("\n")


if __name__ == "__main__":
    main()
