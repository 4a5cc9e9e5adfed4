/** The JSON type of a decoded value, for error messages: null, array, object, string, ... */
export function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
