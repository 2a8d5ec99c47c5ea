import { AsyncLocalStorage } from 'node:async_hooks';
import { type Config, processConfig } from './config.js';
import { cloudWatchObserver } from './metrics/cloudwatch.js';
import type { OperationObserver } from './metrics/observer.js';

/** The AWS services whose clients a context builds. */
export type AwsService = 'dynamodb' | 'sqs';

/**
 * How whoever creates a context adapts it without the product knowing them: the embedded runtime signs
 * for its emulators and may model the network to AWS; the benchmark observes every operation. Lambda's
 * own context takes none of the client hooks.
 */
export interface ContextHooks {
  /** Client options for a service, merged over the product's own (a signer, say). */
  clientOptions?(service: AwsService): Record<string, unknown>;
  /** Called once with each client built (middleware added from outside). */
  clientBuilt?(service: AwsService, client: unknown): void;
  /** Where the measured operations go (operations.ts); nothing is measured without one. */
  observer?: OperationObserver;
  /** The time it is, in epoch milliseconds (tests move it); the product's own contexts read the real time. */
  clock?(): number;
}

/**
 * What a handler runs with: its configuration and the clients built from it (one DynamoDB client, one SQS
 * client, ... per context). A Lambda function has one, from its environment. The embedded runtime builds
 * one from its own settings and runs every handler invocation inside it, so two runtimes can share a
 * process without sharing an endpoint, a table or a signing key, and nothing writes the environment.
 */
export interface AppContext {
  readonly config: Config;
  /** Clients and caches built lazily from `config`, keyed by their factory. */
  readonly cache: Map<symbol, unknown>;
  readonly hooks: ContextHooks;
}

const current = new AsyncLocalStorage<AppContext>();
let processContext: AppContext | undefined;

export function createContext(config: Config, hooks: ContextHooks = {}): AppContext {
  return { config, cache: new Map(), hooks };
}

/** Runs `work` (and everything it starts) with `context` as the current context. */
export function runInContext<T>(context: AppContext, work: () => T): T {
  return current.run(context, work);
}

/** The context of the running invocation; outside one, the process's (Lambda's) context. */
export function currentContext(): AppContext {
  const active = current.getStore();
  if (active) return active;
  processContext ??= processContextOf(processConfig());
  return processContext;
}

/** The configuration of the running invocation. */
export function config(): Config {
  return currentContext().config;
}

/**
 * A value built once per context from its configuration (a client, a key resolver). `dispose` is called
 * on each built value when the context is disposed.
 */
export function perContext<T>(make: (config: Config) => T): () => T {
  const key = Symbol(make.name || 'perContext');
  return () => {
    const context = currentContext();
    if (!context.cache.has(key)) context.cache.set(key, make(context.config));
    return context.cache.get(key) as T;
  };
}

/** Releases what a context built (the SDK clients' sockets); the context can be used again afterwards. */
export function disposeContext(context: AppContext): void {
  for (const value of context.cache.values()) {
    (value as { destroy?: () => void } | null)?.destroy?.();
  }
  context.cache.clear();
}

/**
 * Lambda's context: its configuration from the environment and, when a metrics namespace is set, its
 * operations published as CloudWatch metrics.
 */
function processContextOf(config: Config): AppContext {
  return createContext(
    config,
    config.metricsNamespace ? { observer: cloudWatchObserver(config.metricsNamespace) } : {},
  );
}
