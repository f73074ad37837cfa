// symcost's exact arithmetic for exported formulas (export --to js, the HTML page): rationals {n, d}
// over BigInt, d > 0, in lowest terms. Integers never pass through a double, so a count at
// T = 2^21, B = 64 is exact to the last digit. Formulas call only these functions.
function $gcd(a, b) {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b) [a, b] = [b, a % b];
  return a;
}
function $q(n, d = 1n) {
  if (d === 0n) throw new RangeError("division by zero");
  if (d < 0n) { n = -n; d = -d; }
  const g = $gcd(n, d);
  return g > 1n ? { n: n / g, d: d / g } : { n, d };
}
function $arg(name, x) {
  if (typeof x === "bigint") return $q(x);
  if (typeof x === "number" && Number.isSafeInteger(x)) return $q(BigInt(x));
  if (typeof x === "string" && /^-?[0-9]+$/.test(x)) return $q(BigInt(x));
  if (x !== null && typeof x === "object" && typeof x.n === "bigint" && typeof x.d === "bigint") return $q(x.n, x.d);
  throw new TypeError(name + ": expected an integer (number, BigInt or digits), got " + String(x));
}
function $add(...a) { return a.reduce((x, y) => $q(x.n * y.d + y.n * x.d, x.d * y.d)); }
function $mul(...a) { return a.reduce((x, y) => $q(x.n * y.n, x.d * y.d)); }
function $pow(x, k) {
  if (k < 0n) { x = $q(x.d, x.n); k = -k; }
  return $q(x.n ** k, x.d ** k);
}
function $cmp(x, y) { const s = x.n * y.d - y.n * x.d; return s < 0n ? -1 : s > 0n ? 1 : 0; }
function $min(...a) { return a.reduce((x, y) => ($cmp(y, x) < 0 ? y : x)); }
function $max(...a) { return a.reduce((x, y) => ($cmp(y, x) > 0 ? y : x)); }
function $floor(x) {
  let f = x.n / x.d; // BigInt division truncates toward zero
  if (x.n < 0n && f * x.d !== x.n) f -= 1n;
  return $q(f);
}
function $ceil(x) { const f = $floor($q(-x.n, x.d)); return $q(-f.n); }
// Mod(a, b) as SymPy (and Python) define it: a - b·floor(a/b), the sign of b
function $mod(a, b) { return $add(a, $mul($q(-1n), b, $floor($mul(a, $q(b.d, b.n))))); }
function $abs(x) { return x.n < 0n ? $q(-x.n, x.d) : x; }
function $lt(x, y) { return $cmp(x, y) < 0; }
function $le(x, y) { return $cmp(x, y) <= 0; }
function $gt(x, y) { return $cmp(x, y) > 0; }
function $ge(x, y) { return $cmp(x, y) >= 0; }
function $eq(x, y) { return $cmp(x, y) === 0; }
function $ne(x, y) { return $cmp(x, y) !== 0; }
// Piecewise: [[condition, value], ...], the first true condition wins (conditions are booleans)
function $pw(...cases) {
  for (const [c, v] of cases) if (c) return v();
  throw new RangeError("no case of the piecewise formula holds");
}
function $int(x) {
  if (x.d !== 1n) throw new RangeError("not a whole number: " + x.n + "/" + x.d);
  return x.n;
}
function $exact(x) { return x.d === 1n ? x.n : x; }
function $toNumber(x) { return typeof x === "bigint" ? Number(x) : Number(x.n) / Number(x.d); }
