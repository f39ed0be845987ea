package ipclab.payload;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * CPython's {@code random.Random} (Python 3.11), as far as the payload generator uses it:
 * seeded from a string, then {@code random}, {@code getrandbits}, {@code randrange},
 * {@code randint}, {@code choice}, {@code choices} and {@code uniform} give the very numbers
 * CPython gives, so the Java services serve the records the Python generator makes
 * ({@code services/domains/payload/data.py}) without a fixture file.
 *
 * <p>The generator is MT19937 ({@code _randommodule.c}); a string seed is seeded as Python's
 * version 2 does: the integer whose big-endian bytes are the UTF-8 string followed by its
 * SHA-512 digest, handed to {@code init_by_array} as 32-bit words, least significant first.
 * The methods follow {@code Lib/random.py}: {@code _randbelow} draws
 * {@code getrandbits(n.bit_length())} until the value is below n.
 */
final class PyRandom {
    private static final int N = 624;
    private static final int M = 397;
    private static final int MATRIX_A = 0x9908b0df;
    private static final int UPPER_MASK = 0x80000000;
    private static final int LOWER_MASK = 0x7fffffff;

    private final int[] mt = new int[N];
    private int mti = N + 1;

    PyRandom(String seed) {
        byte[] text = seed.getBytes(StandardCharsets.UTF_8);
        byte[] digest;
        try {
            digest = MessageDigest.getInstance("SHA-512").digest(text);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("no SHA-512 in this JVM", e);
        }
        byte[] all = new byte[text.length + digest.length];
        System.arraycopy(text, 0, all, 0, text.length);
        System.arraycopy(digest, 0, all, text.length, digest.length);
        BigInteger n = new BigInteger(1, all);
        int bits = n.bitLength();
        int used = bits == 0 ? 1 : (bits - 1) / 32 + 1;
        int[] key = new int[used];
        for (int i = 0; i < used; i++) {
            key[i] = n.shiftRight(32 * i).intValue(); // the low 32 bits of each word
        }
        initByArray(key);
    }

    private void initGenrand(int s) {
        mt[0] = s;
        for (mti = 1; mti < N; mti++) {
            mt[mti] = 1812433253 * (mt[mti - 1] ^ (mt[mti - 1] >>> 30)) + mti;
        }
    }

    private void initByArray(int[] key) {
        initGenrand(19650218);
        int i = 1;
        int j = 0;
        for (int k = Math.max(N, key.length); k > 0; k--) {
            mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >>> 30)) * 1664525)) + key[j] + j;
            i++;
            j++;
            if (i >= N) {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if (j >= key.length) {
                j = 0;
            }
        }
        for (int k = N - 1; k > 0; k--) {
            mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >>> 30)) * 1566083941)) - i;
            i++;
            if (i >= N) {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x80000000;
    }

    /** {@code genrand_uint32}: the next 32 bits, as the low bits of a long. */
    long next32() {
        if (mti >= N) {
            int kk;
            for (kk = 0; kk < N - M; kk++) {
                int y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
                mt[kk] = mt[kk + M] ^ (y >>> 1) ^ ((y & 1) != 0 ? MATRIX_A : 0);
            }
            for (; kk < N - 1; kk++) {
                int y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
                mt[kk] = mt[kk + (M - N)] ^ (y >>> 1) ^ ((y & 1) != 0 ? MATRIX_A : 0);
            }
            int y = (mt[N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
            mt[N - 1] = mt[M - 1] ^ (y >>> 1) ^ ((y & 1) != 0 ? MATRIX_A : 0);
            mti = 0;
        }
        int y = mt[mti++];
        y ^= y >>> 11;
        y ^= (y << 7) & 0x9d2c5680;
        y ^= (y << 15) & 0xefc60000;
        y ^= y >>> 18;
        return y & 0xffffffffL;
    }

    /** {@code random()}: 53 bits in [0, 1). */
    double random() {
        long a = next32() >>> 5;
        long b = next32() >>> 6;
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
    }

    /** {@code getrandbits(k)}, k at most 64 here: the first 32-bit draw is the lowest word. */
    long getrandbits(int k) {
        if (k <= 32) {
            return next32() >>> (32 - k);
        }
        long low = next32();
        long high = next32() >>> (64 - k);
        return low | (high << 32);
    }

    /** {@code getrandbits(128)}: {low 64 bits, high 64 bits}. */
    long[] getrandbits128() {
        long w0 = next32();
        long w1 = next32();
        long w2 = next32();
        long w3 = next32();
        return new long[] {w0 | (w1 << 32), w2 | (w3 << 32)};
    }

    /** {@code _randbelow(n)}, n > 0. */
    long randbelow(long n) {
        int k = 64 - Long.numberOfLeadingZeros(n);
        long r = getrandbits(k);
        while (Long.compareUnsigned(r, n) >= 0) {
            r = getrandbits(k);
        }
        return r;
    }

    /** {@code randrange(start, stop)}. */
    long randrange(long start, long stop) {
        return start + randbelow(stop - start);
    }

    /** {@code randint(a, b)}: a to b, both included. */
    long randint(long a, long b) {
        return randrange(a, b + 1);
    }

    <T> T choice(List<T> seq) {
        return seq.get((int) randbelow(seq.size()));
    }

    /** {@code choices(population, k=k)} of characters, without weights. */
    String choices(String population, int k) {
        double n = population.length();
        StringBuilder out = new StringBuilder(k);
        for (int i = 0; i < k; i++) {
            out.append(population.charAt((int) Math.floor(random() * n)));
        }
        return out.toString();
    }

    double uniform(double a, double b) {
        return a + (b - a) * random();
    }
}
