// Built from sdk/typescript/src/index.ts by `npm run served` in sdk/typescript. Do not edit.
/** A failed call: the API's error code and message, with the HTTP status. */
export class SdkError extends Error {
    /** The API's code (memory_conflict, rag_collection_not_found, ...) or the SDK's own. */
    code;
    /** The HTTP status, 0 when no answer arrived. */
    status;
    /** Seconds the box asked to wait before a retry (Retry-After), if any. */
    retryAfter;
    constructor(code, message, status = 0, retryAfter, options) {
        super(message, options);
        this.name = 'SdkError';
        this.code = code;
        this.status = status;
        this.retryAfter = retryAfter;
    }
}
/** A page of a list, awaitable as the first page, iterable over every item. */
export class Paginated {
    fetchPage;
    #first;
    constructor(fetchPage) {
        this.fetchPage = fetchPage;
    }
    #firstPage() {
        this.#first ??= this.fetchPage(undefined).then((r) => (r.error ? r : { data: r.data.items, error: null }));
        return this.#first;
    }
    then(onfulfilled, onrejected) {
        return this.#firstPage().then(onfulfilled, onrejected);
    }
    /** Every item of every page, fetched page by page; a failed page throws its SdkError. */
    async *[Symbol.asyncIterator]() {
        let cursor;
        for (;;) {
            const page = await this.fetchPage(cursor);
            if (page.error)
                throw page.error;
            yield* page.data.items;
            if (!page.data.next)
                return;
            cursor = page.data.next;
        }
    }
}
function env(name) {
    const p = globalThis.process;
    return p?.env?.[name] || undefined;
}
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(signal.reason);
        const t = setTimeout(() => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
        }, ms);
        const onAbort = () => {
            clearTimeout(t);
            reject(signal.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
    });
}
/** Retry-After in seconds: a number of seconds or an HTTP date. */
function retryAfterSeconds(h) {
    if (!h)
        return undefined;
    const n = Number(h);
    if (Number.isFinite(n) && n >= 0)
        return n;
    const at = Date.parse(h);
    return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
function qs(query) {
    if (!query)
        return '';
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
        if (v === undefined || v === null)
            continue;
        p.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    }
    const s = p.toString();
    return s ? `?${s}` : '';
}
const seg = encodeURIComponent;
/** The HTTP core: one envelope request with retries. */
class Transport {
    baseURL;
    apiKey;
    maxRetries;
    retryDelayMs;
    maxRetryDelayMs;
    fetch;
    constructor(o) {
        this.baseURL = (o.baseURL ?? env('STACKBONE_URL') ?? 'http://127.0.0.1:4242').replace(/\/+$/, '');
        this.apiKey = o.apiKey ?? env('STACKBONE_API_KEY');
        this.maxRetries = o.maxRetries ?? 2;
        this.retryDelayMs = o.retryDelayMs ?? 500;
        this.maxRetryDelayMs = o.maxRetryDelayMs ?? 30_000;
        const f = o.fetch ?? globalThis.fetch;
        this.fetch = f ? f.bind(globalThis) : undefined;
    }
    async request(c) {
        if (!this.fetch)
            return { data: null, error: new SdkError('not_configured', 'no fetch is available; pass one to createClient') };
        const headers = { accept: 'application/json', ...c.headers };
        if (this.apiKey)
            headers.authorization = `Bearer ${this.apiKey}`;
        let body;
        if (c.form)
            body = c.form;
        else if (c.body !== undefined) {
            headers['content-type'] = 'application/json';
            body = JSON.stringify(c.body);
        }
        const url = this.baseURL + c.path + qs(c.query);
        for (let attempt = 0;; attempt++) {
            let res;
            try {
                res = await this.fetch(url, { method: c.method, headers, body, signal: c.signal });
            }
            catch (err) {
                if (c.signal?.aborted)
                    return { data: null, error: aborted(c.signal, err) };
                // Without an answer the box may have done the work: only a request
                // that cannot apply twice is sent again.
                const safe = c.method !== 'POST' || headers['idempotency-key'] !== undefined;
                if (safe && attempt < this.maxRetries) {
                    const waited = await this.#wait(attempt, undefined, c.signal);
                    if (waited)
                        return { data: null, error: waited };
                    continue;
                }
                return { data: null, error: new SdkError('network_error', `${c.method} ${c.path}: ${err?.message ?? err}`, 0, undefined, { cause: err }) };
            }
            if ((res.status === 503 || res.status === 429) && attempt < this.maxRetries) {
                await res.body?.cancel().catch(() => { });
                const waited = await this.#wait(attempt, retryAfterSeconds(res.headers.get('retry-after')), c.signal);
                if (waited)
                    return { data: null, error: waited };
                continue;
            }
            return this.#read(res, c);
        }
    }
    /** Waits before retry attempt+1; returns an error when aborted. */
    async #wait(attempt, retryAfter, signal) {
        let ms = retryAfter !== undefined ? retryAfter * 1000 : this.retryDelayMs * 2 ** attempt * (0.75 + Math.random() * 0.5);
        ms = Math.min(ms, this.maxRetryDelayMs);
        try {
            await sleep(ms, signal);
            return undefined;
        }
        catch (err) {
            return aborted(signal, err);
        }
    }
    async #read(res, c) {
        const retryAfter = retryAfterSeconds(res.headers.get('retry-after'));
        if (c.raw && res.ok) {
            try {
                return { data: (await res.blob()), error: null };
            }
            catch (err) {
                return { data: null, error: readError(c, err, res.status) };
            }
        }
        let text;
        try {
            text = await res.text();
        }
        catch (err) {
            return { data: null, error: readError(c, err, res.status) };
        }
        if (res.status === 204 || text === '') {
            if (res.ok)
                return { data: undefined, error: null };
            return { data: null, error: new SdkError('invalid_response', `${c.method} ${c.path}: ${res.status} with no body`, res.status, retryAfter) };
        }
        let env;
        try {
            env = JSON.parse(text);
        }
        catch {
            return { data: null, error: new SdkError('invalid_response', `${c.method} ${c.path}: ${res.status} answer is not JSON`, res.status, retryAfter) };
        }
        if (res.ok && env && !env.error)
            return { data: env.data, error: null };
        const e = env?.error;
        return {
            data: null,
            error: new SdkError(e?.code ?? 'invalid_response', e?.message ?? `${c.method} ${c.path}: ${res.status}`, res.status, retryAfter),
        };
    }
}
function aborted(signal, cause) {
    const reason = signal?.reason;
    const timeout = reason instanceof Error && reason.name === 'TimeoutError';
    return new SdkError(timeout ? 'timeout' : 'aborted', timeout ? 'the call timed out' : 'the call was aborted', 0, undefined, {
        cause: reason ?? cause,
    });
}
function readError(c, err, status) {
    if (c.signal?.aborted)
        return aborted(c.signal, err);
    return new SdkError('network_error', `${c.method} ${c.path}: the answer was cut: ${err?.message ?? err}`, status, undefined, { cause: err });
}
function newKey() {
    const c = globalThis.crypto;
    if (c?.randomUUID)
        return c.randomUUID();
    return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}
function notImplemented(name) {
    return Promise.resolve({ data: null, error: new SdkError('not_implemented', `memory.${name} is not implemented; use add, recall and deleteAll`) });
}
/** Keyset pagination on `before` (the last id of the previous page). */
function byBefore(t, path, query, o) {
    return new Paginated(async (cursor) => {
        const r = await t.request({ method: 'GET', path, query: { ...query, before: cursor ?? query?.before }, ...o });
        if (r.error)
            return r;
        const items = r.data ?? [];
        return { data: { items, next: items.length > 0 ? items[items.length - 1].id : undefined }, error: null };
    });
}
/** Cursor pagination on `cursor` / `next_cursor` (memory stores). */
function byCursor(t, path, query, items, o) {
    return new Paginated(async (cursor) => {
        const r = await t.request({ method: 'GET', path, query: { ...query, cursor: cursor ?? query?.cursor }, ...o });
        if (r.error)
            return r;
        return { data: { items: items(r.data), next: r.data.next_cursor ?? undefined }, error: null };
    });
}
/** A client of one box. */
export class StackboneClient {
    #t;
    #memory;
    #capabilities;
    constructor(options = {}) {
        this.#t = new Transport(options);
        this.#memory = {
            model: options.memory?.model ?? env('STACKBONE_MEMORY_MODEL'),
            reasoningEffort: (options.memory?.reasoningEffort ?? env('STACKBONE_MEMORY_REASONING_EFFORT')),
        };
    }
    /** Where this client sends its requests. */
    get baseURL() {
        return this.#t.baseURL;
    }
    /** What the box offers (memory.basic, rag, voice.rooms, ...). */
    capabilities(o) {
        return this.#t.request({ method: 'GET', path: '/api/capabilities', ...o }).then((r) => r.error ? r : { data: r.data.capabilities, error: null });
    }
    /** Person memory refuses to run on a box without memory.basic. */
    async #needs(cap, o) {
        this.#capabilities ??= this.capabilities({ signal: o?.signal }).then((r) => {
            if (r.error)
                this.#capabilities = undefined; // ask again next time
            return r;
        });
        const r = await this.#capabilities;
        if (r.error)
            return r.error;
        if (!r.data.includes(cap))
            return new SdkError('capability_unavailable', `the box does not offer ${cap}`);
        return undefined;
    }
    /** Person memory: facts and call records per agent and person. */
    memory = {
        /**
         * Updates the person's facts from a conversation and stores one call
         * record. content is a transcript string or OpenAI-shaped messages.
         */
        add: async (content, request, o) => {
            const missing = await this.#needs('memory.basic', o);
            if (missing)
                return { data: null, error: missing };
            const { idempotencyKey, ...rest } = request;
            const body = { content, ...rest };
            if (this.#memory?.model)
                body.model = this.#memory.model;
            if (this.#memory?.reasoningEffort)
                body.reasoningEffort = this.#memory.reasoningEffort;
            return this.#t.request({
                method: 'POST',
                path: '/api/memory/add',
                body,
                signal: o?.signal,
                headers: { ...o?.headers, 'idempotency-key': idempotencyKey ?? newKey() },
            });
        },
        /** Every fact of the person and their newest call records first (calls: 0 to 100, default 5). */
        recall: async (request, o) => {
            const missing = await this.#needs('memory.basic', o);
            if (missing)
                return { data: null, error: missing };
            return this.#t.request({ method: 'POST', path: '/api/memory/recall', body: request, ...o });
        },
        /** Deletes every fact and call record of one person for one agent. */
        deleteAll: async (request, o) => {
            const missing = await this.#needs('memory.basic', o);
            if (missing)
                return { data: null, error: missing };
            return this.#t.request({ method: 'POST', path: '/api/memory/delete-all', body: request, ...o });
        },
        /** An agent's memory settings (needs config:read; writes config:write). */
        settings: {
            get: (agentId, o) => this.#t.request({ method: 'GET', path: `/api/memory/settings/${seg(agentId)}`, ...o }),
            update: (agentId, patch, o) => this.#t.request({ method: 'PUT', path: `/api/memory/settings/${seg(agentId)}`, body: patch, ...o }),
            reset: (agentId, field, o) => this.#t.request({ method: 'DELETE', path: `/api/memory/settings/${seg(agentId)}`, query: field ? { field } : undefined, ...o }),
        },
        /** Typed placeholders: not_implemented. */
        search: (_query, _request) => notImplemented('search'),
        get: (_id, _request) => notImplemented('get'),
        list: (_request) => notImplemented('list'),
        update: (_id, _content, _request) => notImplemented('update'),
        delete: (_id, _request) => notImplemented('delete'),
        history: (_id, _request) => notImplemented('history'),
        endSession: (_request) => notImplemented('endSession'),
    };
    /** Retrieval: collections of chunked, embedded documents. */
    rag = {
        /** The chunks of one collection (namespace, default "default") closest to text. */
        retrieve: (request, o) => this.#t.request({ method: 'POST', path: '/api/rag/retrieve', body: request, ...o }),
        /** Stores a document's chunks; re-ingesting the same id replaces them. */
        ingest: (request, o) => this.#t.request({ method: 'POST', path: '/api/rag/ingest', body: request, ...o }),
        collections: {
            create: (request, o) => this.#t.request({ method: 'POST', path: '/api/rag/collections', body: request, ...o }),
            list: (o) => this.#t.request({ method: 'GET', path: '/api/rag/collections', ...o }),
        },
        documents: {
            list: (collection, query, o) => this.#t.request({ method: 'GET', path: `/api/rag/collections/${seg(collection)}/documents`, query, ...o }),
            get: (id, o) => this.#t.request({ method: 'GET', path: `/api/rag/documents/${seg(id)}`, ...o }),
            delete: (id, o) => this.#t.request({ method: 'DELETE', path: `/api/rag/documents/${seg(id)}`, ...o }),
            /** Uploads a .txt, .md or .pdf file; the box ingests it in the background. */
            upload: (collection, file, options, o) => {
                const form = new FormData();
                form.set('file', file, options.filename);
                if (options.id)
                    form.set('id', options.id);
                if (options.metadata)
                    form.set('metadata', JSON.stringify(options.metadata));
                return this.#t.request({ method: 'POST', path: `/api/rag/collections/${seg(collection)}/documents`, form, ...o });
            },
            /** The uploaded original. */
            original: (id, o) => this.#t.request({ method: 'GET', path: `/api/rag/originals/${seg(id)}`, raw: true, ...o }),
        },
        jobs: {
            list: (query, o) => this.#t.request({ method: 'GET', path: '/api/rag/jobs', query, ...o }),
            get: (id, o) => this.#t.request({ method: 'GET', path: `/api/rag/jobs/${id}`, ...o }),
            retry: (id, o) => this.#t.request({ method: 'POST', path: `/api/rag/jobs/${id}/retry`, ...o }),
            cancel: (id, o) => this.#t.request({ method: 'POST', path: `/api/rag/jobs/${id}/cancel`, ...o }),
        },
    };
    /** Curated memory stores and their versions. */
    stores = {
        create: (request, o) => this.#t.request({ method: 'POST', path: '/api/memory_stores', body: request, ...o }),
        /** Awaited: the first page; iterated: every store. */
        list: (query, o) => byCursor(this.#t, '/api/memory_stores', query, (p) => p.memory_stores, o),
        get: (storeId, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}`, ...o }),
        update: (storeId, request, o) => this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}`, body: request, ...o }),
        archive: (storeId, o) => this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/archive`, ...o }),
        delete: (storeId, o) => this.#t.request({ method: 'DELETE', path: `/api/memory_stores/${seg(storeId)}`, ...o }),
        memories: {
            create: (storeId, request, o) => this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memories`, body: request, ...o }),
            list: (storeId, query, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memories`, query, ...o }),
            search: (storeId, query, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memories/search`, query, ...o }),
            get: (storeId, memoryId, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memories/${seg(memoryId)}`, ...o }),
            getByPath: (storeId, path, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memory`, query: { path }, ...o }),
            update: (storeId, memoryId, request, o) => this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memories/${seg(memoryId)}`, body: request, ...o }),
            delete: (storeId, memoryId, o) => this.#t.request({ method: 'DELETE', path: `/api/memory_stores/${seg(storeId)}/memories/${seg(memoryId)}`, ...o }),
        },
        versions: {
            list: (storeId, query, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memory_versions`, query, ...o }),
            get: (storeId, versionId, o) => this.#t.request({ method: 'GET', path: `/api/memory_stores/${seg(storeId)}/memory_versions/${seg(versionId)}`, ...o }),
            restore: (storeId, versionId, o) => this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memory_versions/${seg(versionId)}/restore`, ...o }),
            redact: (storeId, versionId, o) => this.#t.request({ method: 'POST', path: `/api/memory_stores/${seg(storeId)}/memory_versions/${seg(versionId)}/redact`, ...o }),
        },
    };
    /** Phone and browser calls. */
    voice = {
        rooms: {
            /** Opens a browser test call; join it over WebRTC with the answer's join details. */
            create: (request, o) => this.#t.request({ method: 'POST', path: '/api/voice/rooms', body: request, ...o }),
            list: (o) => this.#t.request({ method: 'GET', path: '/api/voice/rooms', ...o }),
            get: (id, o) => this.#t.request({ method: 'GET', path: `/api/voice/rooms/${seg(id)}`, ...o }),
            end: (id, o) => this.#t.request({ method: 'DELETE', path: `/api/voice/rooms/${seg(id)}`, ...o }),
            /** Joins a room on the box's embedded peer: the browser's SDP offer for the box's answer (placeCall in @stackbone/sdk/call does it). */
            offer: (id, offer, o) => this.#t.request({ method: 'POST', path: `/api/voice/rooms/${seg(id)}/offer`, body: offer, ...o }),
        },
        calls: {
            /** Awaited: the first page (newest first); iterated: every call. */
            list: (query, o) => byBefore(this.#t, '/api/voice/calls', query, o),
            get: (id, o) => this.#t.request({ method: 'GET', path: `/api/voice/calls/${seg(id)}`, ...o }),
            /** Places an outbound phone call; the answer is its id while it rings. */
            dial: (request, o) => this.#t.request({ method: 'POST', path: '/api/voice/calls', body: request, ...o }),
            /** Ends a ringing or running call from outside. */
            hangup: (id, o) => this.#t.request({ method: 'POST', path: `/api/voice/calls/${seg(id)}/hangup`, ...o }),
        },
    };
    /** Conversations the box keeps. */
    sessions = {
        list: (query, o) => byBefore(this.#t, '/api/sessions', query, o),
        get: (id, o) => this.#t.request({ method: 'GET', path: `/api/sessions/${seg(id)}`, ...o }),
        /** Approves or rejects the held tool call; the rest of the turn runs. */
        decide: (id, request, o) => this.#t.request({ method: 'POST', path: `/api/sessions/${seg(id)}/decision`, body: request, ...o }),
    };
    /** Run history. */
    runs = {
        list: (query, o) => byBefore(this.#t, '/api/runs', query, o),
        get: (id, o) => this.#t.request({ method: 'GET', path: `/api/runs/${seg(id)}`, ...o }),
    };
    /** API keys. */
    keys = {
        self: (o) => this.#t.request({ method: 'GET', path: '/api/keys/self', ...o }),
        list: (o) => this.#t.request({ method: 'GET', path: '/api/keys', ...o }),
        /** The secret is in the answer only. */
        create: (request, o) => this.#t.request({ method: 'POST', path: '/api/keys', body: request, ...o }),
        revoke: (name, o) => this.#t.request({ method: 'DELETE', path: `/api/keys/${seg(name)}`, ...o }),
    };
}
/** A client of one box: options override STACKBONE_URL and STACKBONE_API_KEY. */
export function createClient(options = {}) {
    return new StackboneClient(options);
}
let ambient;
/** The client configured from STACKBONE_URL and STACKBONE_API_KEY, made on first use. */
export const stackbone = new Proxy({}, {
    get(_target, prop) {
        ambient ??= new StackboneClient();
        const v = Reflect.get(ambient, prop, ambient);
        return typeof v === 'function' ? v.bind(ambient) : v;
    },
});
