/** IPv6 text as numbers, for rules that look at an address's prefix rather than its spelling. */

/**
 * The eight 16-bit groups of an IPv6 address (one with a dotted IPv4 tail included), so that
 * every spelling of one address (compressed or not, hex or dotted tail) gives the same groups.
 * The caller has checked that it is an IPv6 address without a zone.
 */
export function ipv6Groups(address: string): number[] {
  let text = address;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
