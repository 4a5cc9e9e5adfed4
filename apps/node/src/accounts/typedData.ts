import { type TypedData, WalletError, WalletErrorCode } from "@nodex/rpc";

/** The struct types `primaryType` uses, itself included (EIP-712 hashes only those). */
function reachable(data: TypedData): Record<string, { name: string; type: string }[]> {
  const out: Record<string, { name: string; type: string }[]> = {};
  const queue = [data.primaryType];
  while (queue.length > 0) {
    const name = queue.pop()!;
    const fields = data.types[name];
    if (fields === undefined || name in out) continue;
    out[name] = fields.map((f) => ({ name: f.name, type: f.type }));
    for (const field of fields) queue.push(field.type.replace(/(\[\d*\])+$/, ""));
  }
  return out;
}

/**
 * The EIP-712 digest of `data` (`eth_signTypedData_v4`): keccak256(0x19 0x01 ‖ domain
 * separator ‖ hashStruct(primaryType, message)), computed by ethers' `TypedDataEncoder`, loaded
 * on first use. `EIP712Domain` in `types` is left out (the domain is hashed from its values),
 * and so are types the primary type does not use. Values that do not fit their types are
 * `INVALID_TYPED_DATA`.
 */
export async function typedDataDigest(data: TypedData): Promise<Uint8Array> {
  const { TypedDataEncoder, concat, getBytes, keccak256 } = await import("ethers");
  try {
    const types = reachable(data);
    delete types.EIP712Domain;
    const domain = TypedDataEncoder.hashDomain(data.domain);
    if (data.primaryType === "EIP712Domain") return getBytes(keccak256(concat(["0x1901", domain])));
    const struct = TypedDataEncoder.from(types).hashStruct(data.primaryType, data.message);
    return getBytes(keccak256(concat(["0x1901", domain, struct])));
  } catch (err) {
    const reason = (err as { shortMessage?: string; message?: string }).shortMessage;
    throw new WalletError(
      WalletErrorCode.INVALID_TYPED_DATA,
      `invalid typed data: ${reason ?? (err as Error).message}`,
    );
  }
}

/** 65 bytes r ‖ s ‖ v (27/28) of `digest` with `key`, as `eth_sign` writes its signatures. */
export async function signDigest(digest: Uint8Array, key: Uint8Array): Promise<Uint8Array> {
  const { SigningKey, getBytes } = await import("ethers");
  return getBytes(new SigningKey(key).sign(digest).serialized);
}
