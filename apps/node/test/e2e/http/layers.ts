import { HTTP_LAYERS } from "@nodex/rpc";

/** Every value `--rpc-http-layer` accepts: each must pass the same tests. */
export const HTTP_LAYER_VALUES: readonly string[] = HTTP_LAYERS;
