// The Stackbone box from code. Every method returns Result<T>:
// { data, error: null } on success, { data: null, error: SdkError } on a
// failure, never a thrown error.
import type {
  Call,
  Fact,
  HeldToolCall,
  Key,
  MemoryAddResult,
  MemoryCall,
  MemoryRecallResult,
  MemorySettings,
  MemoryStore,
  MemoryStorePage,
  Operations,
  RagCollection,
  RagDocument,
  RagHit,
  RagJob,
  RagUploadResult,
  Room,
  Run,
  Session,
  SessionDetail,
  StoreListing,
  StoreMemory,
  StoreSearchResult,
  StoreVersionDetail,
  StoreVersionPage,
  ErrorCode,
} from './api.gen.js';

export type * from './api.gen.js';

/** The outcome of every SDK call. */
export type Result<T> = { data: T; error: null } | { data: null; error: SdkError };

/** Codes the SDK itself answers, besides the API's. */
export type ClientErrorCode =
  | 'network_error'
  | 'aborted'
  | 'timeout'
  | 'invalid_response'
  | 'not_configured'
  | 'capability_unavailable'
  | 'not_implemented'
  /** A browser call could not join its room (the microphone refused, WebRTC failed). */
  | 'join_failed';

/** A failed call: the API's error code and message, with the HTTP status. */
export class SdkError extends Error {
  /** The API's code (memory_conflict, rag_collection_not_found, ...) or the SDK's own. */
  readonly code: ErrorCode | ClientErrorCode | (string & {});
  /** The HTTP status, 0 when no answer arrived. */
  readonly status: number;
  /** Seconds the box asked to wait before a retry (Retry-After), if any. */
  readonly retryAfter: number | undefined;

  constructor(code: string, message: string, status = 0, retryAfter?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SdkError';
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

/** Options of one call. */
export interface RequestOptions {
  /** Aborts the call (and any retry wait); the result's error is `aborted`. */
  signal?: AbortSignal;
  /** Extra headers. */
  headers?: Record<string, string>;
}

export interface ClientOptions {
  /** Where the box listens. Default: STACKBONE_URL, else http://127.0.0.1:4242. */
  baseURL?: string;
  /** The API key. Default: STACKBONE_API_KEY. */
  apiKey?: string;
  /** Retries of a 503 or 429 answer, and of a request that got no answer unless it is a POST without an Idempotency-Key. Default 2. */
  maxRetries?: number;
  /** The first backoff in milliseconds, doubled each retry unless the box sends Retry-After. Default 500. */
  retryDelayMs?: number;
  /** The longest wait between tries, in milliseconds. Default 30000. */
  maxRetryDelayMs?: number;
  /** The fetch to use. Default: the global fetch. */
  fetch?: typeof fetch;
  /** Extraction model fallbacks for memory.add (Studio's selection comes first). */
  memory?: { model?: string; reasoningEffort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' };
}

type Message = { role: string; content: unknown; [key: string]: unknown };

/** memory.add's request: who the memory is for, the call record, and extraction policy. */
export interface MemoryAddRequest {
  agentId: string;
  userId: string;
  call?: { startedAt?: string; durationSeconds?: number; outcome?: string; runId?: string };
  instructions?: string;
  /** Sent as Idempotency-Key; a retried add with the same key returns the first result. Default: a new key per add. */
  idempotencyKey?: string;
}

export interface MemoryScope {
  agentId: string;
  userId: string;
}

/** A page of a list, awaitable as the first page, iterable over every item. */
export class Paginated<T> implements PromiseLike<Result<T[]>>, AsyncIterable<T> {
  #first: Promise<Result<T[]>> | undefined;
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Result<{ items: T[]; next: string | undefined }>>,
  ) {}

  #firstPage(): Promise<Result<T[]>> {
    this.#first ??= this.fetchPage(undefined).then((r) => (r.error ? r : { data: r.data.items, error: null }));
    return this.#first;
  }

  then<A = Result<T[]>, B = never>(
    onfulfilled?: ((value: Result<T[]>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): PromiseLike<A | B> {
    return this.#firstPage().then(onfulfilled, onrejected);
  }

  /** Every item of every page, fetched page by page; a failed page throws its SdkError. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.fetchPage(cursor);
      if (page.error) throw page.error;
      yield* page.data.items;
      if (!page.data.next) return;
      cursor = page.data.next;
    }
  }
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name] || undefined;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Retry-After in seconds: a number of seconds or an HTTP date. */
function retryAfterSeconds(h: string | null): number | undefined {
  if (!h) return undefined;
  const n = Number(h);
  if (Number.isFinite(n) && n >= 0) return n;
  const at = Date.parse(h);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}

function qs(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    p.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}

const seg = encodeURIComponent;

interface Call_ {
  method: string;
  path: string;
  body?: unknown;
  form?: FormData;
  query?: Record<string, unknown>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** The answer is not the envelope (a file). */
  raw?: boolean;
}

/** The HTTP core: one envelope request with retries. */
class Transport {
  readonly baseURL: string;
  readonly apiKey: string | undefined;
  readonly maxRetries: number;
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly fetch: typeof fetch;

  constructor(o: ClientOptions) {
    this.baseURL = (o.baseURL ?? env('STACKBONE_URL') ?? 'http://127.0.0.1:4242').replace(/\/+$/, '');
    this.apiKey = o.apiKey ?? env('STACKBONE_API_KEY');
    this.maxRetries = o.maxRetries ?? 2;
    this.retryDelayMs = o.retryDelayMs ?? 500;
    this.maxRetryDelayMs = o.maxRetryDelayMs ?? 30_000;
    const f = o.fetch ?? globalThis.fetch;
    this.fetch = f ? f.bind(globalThis) : (undefined as unknown as typeof fetch);
  }

  async request<T>(c: Call_): Promise<Result<T>> {
    if (!this.fetch) return { data: null, error: new SdkError('not_configured', 'no fetch is available; pass one to createClient') };
    const headers: Record<string, string> = { accept: 'application/json', ...c.headers };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    let body: BodyInit | undefined;
    if (c.form) body = c.form;
    else if (c.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(c.body);
    }
    const url = this.baseURL + c.path + qs(c.query);
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetch(url, { method: c.method, headers, body, signal: c.signal });
      } catch (err) {
        if (c.signal?.aborted) return { data: null, error: aborted(c.signal, err) };
        // Without an answer the box may have done the work: only a request
        // that cannot apply twice is sent again.
        const safe = c.method !== 'POST' || headers['idempotency-key'] !== undefined;
        if (safe && attempt < this.maxRetries) {
          const waited = await this.#wait(attempt, undefined, c.signal);
          if (waited) return { data: null, error: waited };
          continue;
        }
        return { data: null, error: new SdkError('network_error', `${c.method} ${c.path}: ${(err as Error)?.message ?? err}`, 0, undefined, { cause: err }) };
      }
      if ((res.status === 503 || res.status === 429) && attempt < this.maxRetries) {
        await res.body?.cancel().catch(() => {});
        const waited = await this.#wait(attempt, retryAfterSeconds(res.headers.get('retry-after')), c.signal);
        if (waited) return { data: null, error: waited };
        continue;
      }
      return this.#read<T>(res, c);
    }
  }

  /** Waits before retry attempt+1; returns an error when aborted. */
  async #wait(attempt: number, retryAfter: number | undefined, signal?: AbortSignal): Promise<SdkError | undefined> {
    let ms = retryAfter !== undefined ? retryAfter * 1000 : this.retryDelayMs * 2 ** attempt * (0.75 + Math.random() * 0.5);
    ms = Math.min(ms, this.maxRetryDelayMs);
    try {
      await sleep(ms, signal);
      return undefined;
    } catch (err) {
      return aborted(signal, err);
    }
  }

  async #read<T>(res: Response, c: Call_): Promise<Result<T>> {
    const retryAfter = retryAfterSeconds(res.headers.get('retry-after'));
    if (c.raw && res.ok) {
      try {
        return { data: (await res.blob()) as T, error: null };
      } catch (err) {
        return { data: null, error: readError(c, err, res.status) };
      }
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      return { data: null, error: readError(c, err, res.status) };
    }
    if (res.status === 204 || text === '') {
      if (res.ok) return { data: undefined as T, error: null };
      return { data: null, error: new SdkError('invalid_response', `${c.method} ${c.path}: ${res.status} with no body`, res.status, retryAfter) };
    }
    let env: { data?: unknown; error?: { code?: string; message?: string } | null };
    try {
      env = JSON.parse(text);
    } catch {
      return { data: null, error: new SdkError('invalid_response', `${c.method} ${c.path}: ${res.status} answer is not JSON`, res.status, retryAfter) };
    }
    if (res.ok && env && !env.error) return { data: env.data as T, error: null };
    const e = env?.error;
    return {
      data: null,
      error: new SdkError(e?.code ?? 'invalid_response', e?.message ?? `${c.method} ${c.path}: ${res.status}`, res.status, retryAfter),
    };
  }
}

function aborted(signal: AbortSignal | undefined, cause: unknown): SdkError {
  const reason = signal?.reason;
  const timeout = reason instanceof Error && reason.name === 'TimeoutError';
  return new SdkError(timeout ? 'timeout' : 'aborted', timeout ? 'the call timed out' : 'the call was aborted', 0, undefined, {
    cause: reason ?? cause,
  });
}

function readError(c: Call_, err: unknown, status: number): SdkError {
  if (c.signal?.aborted) return aborted(c.signal, err);
  return new SdkError('network_error', `${c.method} ${c.path}: the answer was cut: ${(err as Error)?.message ?? err}`, status, undefined, { cause: err });
}

function newKey(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}

function notImplemented<T>(name: string): Promise<Result<T>> {
  return Promise.resolve({ data: null, error: new SdkError('not_implemented', `memory.${name} is not implemented; use add, recall and deleteAll`) });
}

type Q<K extends keyof Operations> = Operations[K]['query'];
type B<K extends keyof Operations> = Operations[K]['body'];

/** Keyset pagination on `before` (the last id of the previous page). */
function byBefore<T extends { id: string }>(t: Transport, path: string, query: Record<string, unknown> | undefined, o?: RequestOptions) {
  return new Paginated<T>(async (cursor) => {
    const r = await t.request<T[]>({ method: 'GET', path, query: { ...query, before: cursor ?? query?.before }, ...o });
    if (r.error) return r;
    const items = r.data ?? [];
    return { data: { items, next: items.length > 0 ? items[items.length - 1]!.id : undefined }, error: null };
  });
}

/** Cursor pagination on `cursor` / `next_cursor` (memory stores). */
function byCursor<T, P extends { next_cursor: string | null }>(
  t: Transport,
  path: string,
  query: Record<string, unknown> | undefined,
  items: (p: P) => T[],
  o?: RequestOptions,
) {
  return new Paginated<T>(async (cursor) => {
    const r = await t.request<P>({ method: 'GET', path, query: { ...query, cursor: cursor ?? query?.cursor }, ...o });
    if (r.error) return r;
    return { data: { items: items(r.data), next: r.data.next_cursor ?? undefined }, error: null };
  });
}

/** A client of one box. */
export class StackboneClient {
  readonly #t: Transport;
  readonly #memory: ClientOptions['memory'];
  #capabilities: Promise<Result<string[]>> | undefined;

  constructor(options: ClientOptions = {}) {
    this.#t = new Transport(options);
    this.#memory = {
      model: options.memory?.model ?? env('STACKBONE_MEMORY_MODEL'),
      reasoningEffort: (options.memory?.reasoningEffort ?? env('STACKBONE_MEMORY_REASONING_EFFORT')) as NonNullable<ClientOptions['memory']>['reasoningEffort'],
    };
  }

  /** Where this client sends its requests. */
  get baseURL(): string {
    return this.#t.baseURL;
  }

  /** What the box offers (memory.basic, rag, voice.rooms, ...). */
  capabilities(o?: RequestOptions): Promise<Result<string[]>> {
    return this.#t.request<{ capabilities: string[] }>({ method: 'GET', path: '/api/capabilities', ...o }).then((r) =>
      r.error ? r : { data: r.data.capabilities, error: null },
    );
  }

  /** Person memory refuses to run on a box without memory.basic. */
  async #needs(cap: string, o?: RequestOptions): Promise<SdkError | undefined> {
    this.#capabilities ??= this.capabilities({ signal: o?.signal }).then((r) => {
      if (r.error) this.#capabilities = undefined; // ask again next time
      return r;
    });
    const r = await this.#capabilities;
    if (r.error) return r.error;
    if (!r.data.includes(cap)) return new SdkError('capability_unavailable', `the box does not offer ${cap}`);
    return undefined;
  }

  /** Person memory: facts and call records per agent and person. */
  readonly memory = {
    /**
     * Updates the person's facts from a conversation and stores one call
     * record. content is a transcript string or OpenAI-shaped messages.
     */
    add: async (content: string | Message[], request: MemoryAddRequest, o?: RequestOptions): Promise<Result<MemoryAddResult>> => {
      const missing = await this.#needs('memory.basic', o);
      if (missing) return { data: null, error: missing };
      const { idempotencyKey, ...rest } = request;
      const body: Record<string, unknown> = { content, ...rest };
      if (this.#memory?.model) body.model = this.#memory.model;
      if (this.#memory?.reasoningEffort) body.reasoningEffort = this.#memory.reasoningEffort;
      return this.#t.request({
        method: 'POST',
        path: '/api/memory/add',
        body,
        signal: o?.signal,
        headers: { ...o?.headers, 'idempotency-key': idempotencyKey ?? newKey() },
      });
    },
    /** Every fact of the person and their newest call records first (calls: 0 to 100, default 5). */
    recall: async (request: MemoryScope & { calls?: number }, o?: RequestOptions): Promise<Result<MemoryRecallResult>> => {
      const missing = await this.#needs('memory.basic', o);
      if (missing) return { data: null, error: missing };
      return this.#t.request({ method: 'POST', path: '/api/memory/recall', body: request, ...o });
    },
    /** Deletes every fact and call record of one person for one agent. */
    deleteAll: async (request: MemoryScope, o?: RequestOptions): Promise<Result<{ deleted: number }>> => {
      const missing = await this.#needs('memory.basic', o);
      if (missing) return { data: null, error: missing };
      return this.#t.request({ method: 'POST', path: '/api/memory/delete-all', body: request, ...o });
    },
    /** An agent's memory settings (needs config:read; writes config:write). */
    settings: {
      get: (agentId: string, o?: RequestOptions): Promise<Result<MemorySettings>> =>
        this.#t.request({ method: 'GET', path: `/api/memory/settings/${seg(agentId)}`, ...o }),
      update: (agentId: string, patch: B<'putMemorySettings'>, o?: RequestOptions): Promise<Result<MemorySettings>> =>
        this.#t.request({ method: 'PUT', path: `/api/memory/settings/${seg(agentId)}`, body: patch, ...o }),
      reset: (agentId: string, field?: 'read' | 'save' | 'instructions', o?: RequestOptions): Promise<Result<MemorySettings>> =>
        this.#t.request({ method: 'DELETE', path: `/api/memory/settings/${seg(agentId)}`, query: field ? { field } : undefined, ...o }),
    },
    /** Typed placeholders: not_implemented. */
    search: (_query: string, _request?: unknown): Promise<Result<Fact[]>> => notImplemented('search'),
    get: (_id: string, _request?: unknown): Promise<Result<Fact>> => notImplemented('get'),
    list: (_request?: unknown): Promise<Result<Fact[]>> => notImplemented('list'),
    update: (_id: string, _content: string, _request?: unknown): Promise<Result<Fact>> => notImplemented('update'),
    delete: (_id: string, _request?: unknown): Promise<Result<{ deleted: number }>> => notImplemented('delete'),
    history: (_id: string, _request?: unknown): Promise<Result<MemoryCall[]>> => notImplemented('history'),
    endSession: (_request?: unknown): Promise<Result<void>> => notImplemented('endSession'),
  };

  /** Retrieval: collections of chunked, embedded documents. */
  readonly rag = {
    /** The chunks of one collection (namespace, default "default") closest to text. */
    retrieve: (request: B<'ragRetrieve'>, o?: RequestOptions): Promise<Result<RagHit[]>> =>
      this.#t.request({ method: 'POST', path: '/api/rag/retrieve', body: request, ...o }),
    /** Stores a document's chunks; re-ingesting the same id replaces them. */
    ingest: (request: B<'ragIngest'>, o?: RequestOptions): Promise<Result<RagDocument>> =>
      this.#t.request({ method: 'POST', path: '/api/rag/ingest', body: request, ...o }),
    collections: {
      create: (request: B<'createCollection'>, o?: RequestOptions): Promise<Result<RagCollection>> =>
        this.#t.request({ method: 'POST', path: '/api/rag/collections', body: request, ...o }),
      list: (o?: RequestOptions): Promise<Result<RagCollection[]>> => this.#t.request({ method: 'GET', path: '/api/rag/collections', ...o }),
    },
    documents: {
      list: (collection: string, query?: Q<'listDocuments'>, o?: RequestOptions): Promise<Result<RagDocument[]>> =>
        this.#t.request({ method: 'GET', path: `/api/rag/collections/${seg(collection)}/documents`, query, ...o }),
      get: (id: string, o?: RequestOptions): Promise<Result<RagDocument>> =>
        this.#t.request({ method: 'GET', path: `/api/rag/documents/${seg(id)}`, ...o }),
      delete: (id: string, o?: RequestOptions): Promise<Result<{ id: string; deleted: boolean }>> =>
        this.#t.request({ method: 'DELETE', path: `/api/rag/documents/${seg(id)}`, ...o }),
      /** Uploads a .txt, .md or .pdf file; the box ingests it in the background. */
      upload: (
        collection: string,
        file: Blob,
        options: { filename: string; id?: string; metadata?: Record<string, unknown> },
        o?: RequestOptions,
      ): Promise<Result<RagUploadResult>> => {
        const form = new FormData();
        form.set('file', file, options.filename);
        if (options.id) form.set('id', options.id);
        if (options.metadata) form.set('metadata', JSON.stringify(options.metadata));
        return this.#t.request({ method: 'POST', path: `/api/rag/collections/${seg(collection)}/documents`, form, ...o });
      },
      /** The uploaded original. */
      original: (id: string, o?: RequestOptions): Promise<Result<Blob>> =>
        this.#t.request({ method: 'GET', path: `/api/rag/originals/${seg(id)}`, raw: true, ...o }),
    },
    jobs: {
      list: (query?: Q<'listIngestJobs'>, o?: RequestOptions): Promise<Result<RagJob[]>> =>
        this.#t.request({ method: 'GET', path: '/api/rag/jobs', query, ...o }),
      get: (id: number, o?: RequestOptions): Promise<Result<RagJob>> => this.#t.request({ method: 'GET', path: `/api/rag/jobs/${id}`, ...o }),
      retry: (id: number, o?: RequestOptions): Promise<Result<RagJob>> =>
        this.#t.request({ method: 'POST', path: `/api/rag/jobs/${id}/retry`, ...o }),
      cancel: (id: number, o?: RequestOptions): Promise<Result<RagJob>> =>
        this.#t.request({ method: 'POST', path: `/api/rag/jobs/${id}/cancel`, ...o }),
    },
  };

  /** Curated memory stores and their versions. */
  readonly stores = {
    create: (request: B<'createStore'>, o?: RequestOptions): Promise<Result<MemoryStore>> =>
      this.#t.request({ method: 'POST', path: '/api/memory_stores', body: request, ...o }),
    /** Awaited: the first page; iterated: every store. */
    list: (query?: Q<'listStores'>, o?: RequestOptions): Paginated<MemoryStore> =>
      byCursor<MemoryStore, MemoryStorePage>(this.#t, '/api/memory_stores', query, (p) => p.memory_stores, o),
    get: (storeId: string, o?: RequestOptions): Promise<Result<MemoryStore>> =>
      this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}`, ...o }),
    update: (storeId: string, request: B<'updateStore'>, o?: RequestOptions): Promise<Result<MemoryStore>> =>
      this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}`, body: request, ...o }),
    archive: (storeId: string, o?: RequestOptions): Promise<Result<void>> =>
      this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/archive`, ...o }),
    delete: (storeId: string, o?: RequestOptions): Promise<Result<void>> =>
      this.#t.request({ method: 'DELETE', path: `/api/memory_stores/${seg(storeId)}`, ...o }),
    memories: {
      create: (storeId: string, request: B<'createMemory'>, o?: RequestOptions): Promise<Result<StoreMemory>> =>
        this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memories`, body: request, ...o }),
      list: (storeId: string, query?: Q<'listMemories'>, o?: RequestOptions): Promise<Result<StoreListing>> =>
        this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memories`, query, ...o }),
      search: (storeId: string, query: Q<'searchMemories'>, o?: RequestOptions): Promise<Result<StoreSearchResult>> =>
        this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memories/search`, query, ...o }),
      get: (storeId: string, memoryId: string, o?: RequestOptions): Promise<Result<StoreMemory>> =>
        this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memories/${seg(memoryId)}`, ...o }),
      getByPath: (storeId: string, path: string, o?: RequestOptions): Promise<Result<StoreMemory>> =>
        this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memory`, query: { path }, ...o }),
      update: (storeId: string, memoryId: string, request: B<'updateMemory'>, o?: RequestOptions): Promise<Result<StoreMemory>> =>
        this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memories/${seg(memoryId)}`, body: request, ...o }),
      delete: (storeId: string, memoryId: string, o?: RequestOptions): Promise<Result<void>> =>
        this.#t.request({ method: 'DELETE', path: `/api/memory_stores/${seg(storeId)}/memories/${seg(memoryId)}`, ...o }),
    },
    versions: {
      list: (storeId: string, query?: Q<'listVersions'>, o?: RequestOptions): Promise<Result<StoreVersionPage>> =>
        this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memory_versions`, query, ...o }),
      get: (storeId: string, versionId: string, o?: RequestOptions): Promise<Result<StoreVersionDetail>> =>
        this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memory_versions/${seg(versionId)}`, ...o }),
      restore: (storeId: string, versionId: string, o?: RequestOptions): Promise<Result<StoreMemory>> =>
        this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memory_versions/${seg(versionId)}/restore`, ...o }),
      redact: (storeId: string, versionId: string, o?: RequestOptions): Promise<Result<void>> =>
        this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memory_versions/${seg(versionId)}/redact`, ...o }),
    },
  };

  /** Phone and browser calls. */
  readonly voice = {
    rooms: {
      /** Opens a browser test call; join it over WebRTC with the answer's join details. */
      create: (request: B<'createRoom'>, o?: RequestOptions): Promise<Result<Room>> =>
        this.#t.request({ method: 'POST', path: '/api/voice/rooms', body: request, ...o }),
      list: (o?: RequestOptions): Promise<Result<Room[]>> => this.#t.request({ method: 'GET', path: '/api/voice/rooms', ...o }),
      get: (id: string, o?: RequestOptions): Promise<Result<Room>> => this.#t.request({ method: 'GET', path: `/api/voice/rooms/${seg(id)}`, ...o }),
      end: (id: string, o?: RequestOptions): Promise<Result<{ id: string; status: string }>> =>
        this.#t.request({ method: 'DELETE', path: `/api/voice/rooms/${seg(id)}`, ...o }),
      /** Joins a room on the box's embedded peer: the browser's SDP offer for the box's answer (placeCall in @stackbone/sdk/call does it). */
      offer: (id: string, offer: B<'offerRoom'>, o?: RequestOptions): Promise<Result<Operations['offerRoom']['data']>> =>
        this.#t.request({ method: 'POST', path: `/api/voice/rooms/${seg(id)}/offer`, body: offer, ...o }),
    },
    calls: {
      /** Awaited: the first page (newest first); iterated: every call. */
      list: (query?: Q<'listCalls'>, o?: RequestOptions): Paginated<Call> => byBefore<Call>(this.#t, '/api/voice/calls', query, o),
      get: (id: string, o?: RequestOptions): Promise<Result<Call>> => this.#t.request({ method: 'GET', path: `/api/voice/calls/${seg(id)}`, ...o }),
      /** Places an outbound phone call; the answer is its id while it rings. */
      dial: (request: B<'dialCall'>, o?: RequestOptions): Promise<Result<{ callId: string }>> =>
        this.#t.request({ method: 'POST', path: '/api/voice/calls', body: request, ...o }),
      /** Ends a ringing or running call from outside. */
      hangup: (id: string, o?: RequestOptions): Promise<Result<{ id: string; status: string }>> =>
        this.#t.request({ method: 'POST', path: `/api/voice/calls/${seg(id)}/hangup`, ...o }),
    },
  };

  /** Conversations the box keeps. */
  readonly sessions = {
    list: (query?: Q<'listSessions'>, o?: RequestOptions): Paginated<Session> => byBefore<Session>(this.#t, '/api/sessions', query, o),
    get: (id: string, o?: RequestOptions): Promise<Result<SessionDetail>> => this.#t.request({ method: 'GET', path: `/api/sessions/${seg(id)}`, ...o }),
    /** Approves or rejects the held tool call; the rest of the turn runs. */
    decide: (id: string, request: B<'decideSession'>, o?: RequestOptions): Promise<Result<Record<string, unknown>>> =>
      this.#t.request({ method: 'POST', path: `/api/sessions/${seg(id)}/decision`, body: request, ...o }),
  };

  /** Run history. */
  readonly runs = {
    list: (query?: Q<'listRuns'>, o?: RequestOptions): Paginated<Run> => byBefore<Run>(this.#t, '/api/runs', query, o),
    get: (id: string, o?: RequestOptions): Promise<Result<Run>> => this.#t.request({ method: 'GET', path: `/api/runs/${seg(id)}`, ...o }),
  };

  /** API keys. */
  readonly keys = {
    self: (o?: RequestOptions): Promise<Result<Operations['getKeySelf']['data']>> => this.#t.request({ method: 'GET', path: '/api/keys/self', ...o }),
    list: (o?: RequestOptions): Promise<Result<Key[]>> => this.#t.request({ method: 'GET', path: '/api/keys', ...o }),
    /** The secret is in the answer only. */
    create: (request: B<'createKey'>, o?: RequestOptions): Promise<Result<{ key: Key; secret: string }>> =>
      this.#t.request({ method: 'POST', path: '/api/keys', body: request, ...o }),
    revoke: (name: string, o?: RequestOptions): Promise<Result<{ revoked: string }>> =>
      this.#t.request({ method: 'DELETE', path: `/api/keys/${seg(name)}`, ...o }),
  };
}

export type { HeldToolCall };

/** A client of one box: options override STACKBONE_URL and STACKBONE_API_KEY. */
export function createClient(options: ClientOptions = {}): StackboneClient {
  return new StackboneClient(options);
}

let ambient: StackboneClient | undefined;

/** The client configured from STACKBONE_URL and STACKBONE_API_KEY, made on first use. */
export const stackbone: StackboneClient = new Proxy({} as StackboneClient, {
  get(_target, prop) {
    ambient ??= new StackboneClient();
    const v = Reflect.get(ambient, prop, ambient);
    return typeof v === 'function' ? v.bind(ambient) : v;
  },
});
