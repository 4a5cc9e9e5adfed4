import type { ModuleName } from "@nodex/types";
import { RPCError, RPCErrorCode } from "./errors.js";
import type { AnyParamSpec, ParamValues } from "./params.js";
import type { ResultEncoder } from "./results.js";
import type { CallContext, RPCServices } from "./services.js";

/** The method label of a request whose method the node does not declare (or that has none). */
export const OTHER_METHOD = "other";

/** One JSON-RPC method: its parameters, its result encoder and its handler. */
export interface MethodSpec<P extends readonly AnyParamSpec[], R> {
  readonly params: P;
  readonly result: ResultEncoder<R>;
  readonly handler: (
    services: RPCServices,
    args: ParamValues<P>,
    ctx: CallContext,
  ) => R | Promise<R>;
}

/** A method of any signature, as modules and the registry hold them. */
export interface AnyMethodSpec {
  readonly params: readonly AnyParamSpec[];
  // biome-ignore lint/suspicious/noExplicitAny: methods of one module have unrelated signatures
  readonly result: ResultEncoder<any>;
  // biome-ignore lint/suspicious/noExplicitAny: decoded arguments match params, checked by method()
  readonly handler: (services: RPCServices, args: any, ctx: CallContext) => unknown;
}

/** Declares a method; the helper only exists so TypeScript infers its parameter tuple. */
export function method<const P extends readonly AnyParamSpec[], R>(
  spec: MethodSpec<P, R>,
): MethodSpec<P, R> {
  return spec;
}

export interface ModuleDefinition {
  readonly name: ModuleName;
  readonly methods: Readonly<Record<string, AnyMethodSpec>>;
  /**
   * Why the methods cannot run on this node although the module is enabled (what they read
   * is not there: the `sco_` methods without the peer-to-peer network); each answers -32601
   * `the method X is not available: <reason>`.
   */
  readonly unavailable?: string;
}

/** Declares a module; its methods are called as `<module>_<name>`. */
export function defineModule(
  name: ModuleName,
  methods: Readonly<Record<string, AnyMethodSpec>>,
  opts: { readonly unavailable?: string } = {},
): ModuleDefinition {
  return opts.unavailable === undefined
    ? { name, methods }
    : { name, methods, unavailable: opts.unavailable };
}

/** A method ready to be called: the registry has resolved its name. */
export interface RegisteredMethod {
  readonly name: string;
  readonly module: ModuleName;
  readonly spec: AnyMethodSpec;
  /**
   * Hosted mode turns the method off: the error its callers get unless the operator lifted the
   * switch for everyone (`--rpc-hosted-allow`) or for their key (`nodex keys create --allow`).
   */
  readonly hostedOff?: RPCError;
}

/** Methods the service knows and will never run, each with the reason a caller is told. */
const unsupported: readonly {
  readonly match: (name: string) => boolean;
  readonly reason: string;
}[] = [
  {
    match: (name) => name === "eth_getCompilers" || name.startsWith("eth_compile"),
    reason: "compilers are not included in the node, for security reasons",
  },
  { match: (name) => name.startsWith("db_"), reason: "the db_ methods are deprecated" },
  { match: (name) => name.startsWith("shh_"), reason: "the whisper protocol is not supported" },
];

export interface RegistryOptions {
  /** Modules whose methods are served. */
  readonly enabled: ReadonlySet<ModuleName>;
  /** Modules turned off because the node is hosted; their callers are told so. */
  readonly hostedOff: ReadonlySet<ModuleName>;
  /** Methods (of served modules) turned off because the node is hosted. */
  readonly hostedOffMethods?: ReadonlySet<string>;
}

export type Lookup = RegisteredMethod | RPCError;

/**
 * Resolves method names once per request. Unknown, unsupported and disabled methods all
 * answer -32601, each with a message that says which case it is.
 */
export class MethodRegistry {
  readonly #methods = new Map<string, RegisteredMethod>();
  readonly #disabled = new Map<string, RPCError>();
  readonly #enabledModules: readonly ModuleName[];

  constructor(modules: readonly ModuleDefinition[], opts: RegistryOptions) {
    const enabled: ModuleName[] = [];
    for (const mod of modules) {
      const on = opts.enabled.has(mod.name) && !opts.hostedOff.has(mod.name);
      if (on && mod.unavailable === undefined && !enabled.includes(mod.name))
        enabled.push(mod.name);
      for (const [short, spec] of Object.entries(mod.methods)) {
        const name = `${mod.name}_${short}`;
        if (this.#methods.has(name) || this.#disabled.has(name)) {
          throw new Error(`method ${name} is declared twice`);
        }
        if (on && mod.unavailable !== undefined) {
          this.#disabled.set(
            name,
            new RPCError(
              RPCErrorCode.METHOD_NOT_FOUND,
              `the method ${name} is not available: ${mod.unavailable}`,
            ),
          );
        } else if (on && opts.hostedOffMethods?.has(name) === true) {
          const hostedOff = new RPCError(
            RPCErrorCode.METHOD_NOT_FOUND,
            `the method ${name} is not available: it is disabled in hosted mode`,
          );
          this.#methods.set(name, { name, module: mod.name, spec, hostedOff });
        } else if (on) {
          this.#methods.set(name, { name, module: mod.name, spec });
        } else if (
          opts.enabled.has(mod.name) &&
          opts.hostedOff.has(mod.name) &&
          mod.unavailable === undefined
        ) {
          const hostedOff = new RPCError(
            RPCErrorCode.METHOD_NOT_FOUND,
            `the method ${name} is not available: the ${mod.name} module is disabled in hosted mode`,
          );
          this.#methods.set(name, { name, module: mod.name, spec, hostedOff });
        } else {
          const why = opts.hostedOff.has(mod.name)
            ? `the ${mod.name} module is disabled in hosted mode`
            : `the ${mod.name} module is not enabled on this node`;
          this.#disabled.set(
            name,
            new RPCError(
              RPCErrorCode.METHOD_NOT_FOUND,
              `the method ${name} is not available: ${why}`,
            ),
          );
        }
      }
    }
    this.#enabledModules = enabled;
  }

  lookup(name: string): Lookup {
    const found = this.#methods.get(name);
    if (found !== undefined) return found;
    const disabled = this.#disabled.get(name);
    if (disabled !== undefined) return disabled;
    for (const entry of unsupported) {
      if (entry.match(name)) {
        return new RPCError(
          RPCErrorCode.METHOD_NOT_FOUND,
          `the method ${name} is not supported: ${entry.reason}`,
        );
      }
    }
    return new RPCError(
      RPCErrorCode.METHOD_NOT_FOUND,
      `the method ${name} does not exist/is not available`,
    );
  }

  /**
   * The name of a declared method (served, turned off or of a module not enabled), else
   * `other`: a label whose values a client cannot choose (metrics, the access log).
   */
  labelOf(name: string): string {
    return this.#methods.has(name) || this.#disabled.has(name) ? name : OTHER_METHOD;
  }

  /** Every declared method's name: served, turned off, or of a module not enabled. */
  declaredNames(): string[] {
    return [...this.#methods.keys(), ...this.#disabled.keys()];
  }

  /** Names of the served methods, sorted. */
  methodNames(): string[] {
    return [...this.#methods.values()]
      .filter((m) => m.hostedOff === undefined)
      .map((m) => m.name)
      .sort();
  }

  /** Modules with at least one served method, in declaration order. */
  enabledModules(): readonly ModuleName[] {
    return this.#enabledModules;
  }
}
