// Seeded randomness shared by every generator (mulberry32): same seed, same fixtures, byte for
// byte. Lives outside gen/ because generate.mjs runs every module in gen/.
export function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)); // inclusive
  const pick = (items) => items[Math.floor(next() * items.length)];
  const chance = (p) => next() < p;
  return { next, int, pick, chance };
}
