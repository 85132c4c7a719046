"""An independent Python re-implementation of dptune's random streams (src/rng.rs), for fixture
generators that must reproduce the Rust draws bit for bit (developer-only; CI never runs it).

dptune's `stream(seed, path)` is rand_chacha 0.9's `ChaCha20Rng::seed_from_u64(key)` with
    key = fold(path, splitmix64(seed), |acc, p| splitmix64(acc ^ splitmix64(p)))
and rand_core 0.9's `seed_from_u64`, which fills the 32-byte ChaCha key with eight PCG32
outputs (little-endian). The ChaCha20 block function is Bernstein's: 20 rounds, words 12-13 a
64-bit block counter starting at 0, words 14-15 the stream id 0. The generator hands out the
16 output words of block 0, then block 1, ...; `next_u64` joins two consecutive words, low word
first. Every draw dptune makes from these streams is a `next_u64` (uniform f64 =
(u >> 11)·2^-53, rand 0.9's StandardUniform), so the words stay pair-aligned.

`normal` is dptune's Box-Muller: u1 = 1 - U, u2 = U (two uniforms, in that order),
sqrt(-2 ln u1)·cos(2π u2), computed with Python's math module (the platform libm, as Rust's
f64::ln and f64::cos are).
"""

import math

import numpy as np

MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_key(seed, path):
    acc = splitmix64(seed)
    for p in path:
        acc = splitmix64(acc ^ splitmix64(p))
    return acc


def pcg32_seed(state):
    """rand_core 0.9 `seed_from_u64`: eight PCG32 words, the ChaCha key."""
    mul, inc = 6364136223846793005, 11634580027462260723
    words = []
    for _ in range(8):
        state = (state * mul + inc) & MASK64
        xorshifted = (((state >> 18) ^ state) >> 27) & 0xFFFFFFFF
        rot = state >> 59
        words.append(((xorshifted >> rot) | (xorshifted << ((32 - rot) & 31))) & 0xFFFFFFFF)
    return words


def _rotl(v, c):
    return ((v << np.uint32(c)) | (v >> np.uint32(32 - c))).astype(np.uint32)


def chacha20_blocks(key_words, first_block, count):
    """Output words of blocks first_block .. first_block + count - 1, shape (count, 16)."""
    const = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    counters = np.arange(first_block, first_block + count, dtype=np.uint64)
    init = [np.full(count, c, dtype=np.uint32) for c in const]
    init += [np.full(count, k, dtype=np.uint32) for k in key_words]
    init += [
        (counters & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        (counters >> np.uint64(32)).astype(np.uint32),
        np.zeros(count, dtype=np.uint32),
        np.zeros(count, dtype=np.uint32),
    ]
    x = [w.copy() for w in init]

    def qr(a, b, c, d):
        x[a] = x[a] + x[b]
        x[d] = _rotl(x[d] ^ x[a], 16)
        x[c] = x[c] + x[d]
        x[b] = _rotl(x[b] ^ x[c], 12)
        x[a] = x[a] + x[b]
        x[d] = _rotl(x[d] ^ x[a], 8)
        x[c] = x[c] + x[d]
        x[b] = _rotl(x[b] ^ x[c], 7)

    with np.errstate(over="ignore"):
        for _ in range(10):
            qr(0, 4, 8, 12)
            qr(1, 5, 9, 13)
            qr(2, 6, 10, 14)
            qr(3, 7, 11, 15)
            qr(0, 5, 10, 15)
            qr(1, 6, 11, 12)
            qr(2, 7, 8, 13)
            qr(3, 4, 9, 14)
        out = np.stack([x[i] + init[i] for i in range(16)], axis=1)
    return out


class Stream:
    """dptune's `stream(seed, path)`: next_u64, uniform and normal draws in Rust's order."""

    def __init__(self, seed, path):
        self.key = pcg32_seed(stream_key(seed, path))
        self.buf = []
        self.pos = 0
        self.block = 0

    def _refill(self, n_u64):
        blocks = max(64, -(-n_u64 // 8))
        words = chacha20_blocks(self.key, self.block, blocks).reshape(-1).astype(np.uint64)
        self.block += blocks
        pairs = words[0::2] | (words[1::2] << np.uint64(32))
        self.buf = [int(v) for v in pairs]
        self.pos = 0

    def next_u64s(self, n):
        out = []
        while len(out) < n:
            if self.pos >= len(self.buf):
                self._refill(n - len(out))
            take = min(n - len(out), len(self.buf) - self.pos)
            out.extend(self.buf[self.pos:self.pos + take])
            self.pos += take
        return out

    def uniforms(self, n):
        return [(u >> 11) * (1.0 / (1 << 53)) for u in self.next_u64s(n)]

    def normals(self, n):
        u = self.uniforms(2 * n)
        tau = 2.0 * math.pi
        return [math.sqrt(-2.0 * math.log(1.0 - u[2 * i])) * math.cos(tau * u[2 * i + 1])
                for i in range(n)]
