// Generated from api/openapi.json by scripts/generate.mjs. Do not edit.

export type AgentChainOrigins = {
  model: string;
  stt: string;
  tts: string;
};

export type AgentChainOverrides = {
  model: Array<string> | null;
  stt: Array<string> | null;
  tts: Array<string> | null;
};

export type AgentChains = {
  model: Array<string> | null;
  stt: Array<string> | null;
  tts: Array<string> | null;
};

export type AgentChainsView = {
  agentId: string;
  origins: AgentChainOrigins;
  overrides: AgentChainOverrides;
  providers: Array<string>;
  updatedAt: string | null;
  updatedBy: string | null;
  value: AgentChains;
};

export type AgentTurnTaking = {
  agentId: string;
  origins: AgentTurnTakingOrigins;
  overrides: AgentTurnTakingOverrides;
  updatedAt: string | null;
  updatedBy: string | null;
  value: AgentTurnTakingValue;
};

export type AgentTurnTakingOrigins = {
  backchannels: string;
  eagerness: string;
  endpointingMode: string;
  immediateAfterMs: string;
  interruptionMode: string;
  maxEndpointDelayMs: string;
  minEndpointDelayMs: string;
  minVoicedMs: string;
  minWords: string;
  resumeAfterMs: string;
  turnDetection: string;
  vad: string;
};

export type AgentTurnTakingOverrides = {
  backchannels?: Array<string>;
  eagerness?: string | null;
  endpointingMode?: string | null;
  immediateAfterMs?: number | null;
  interruptionMode?: string | null;
  maxEndpointDelayMs?: number | null;
  minEndpointDelayMs?: number | null;
  minVoicedMs?: number | null;
  minWords?: number | null;
  resumeAfterMs?: number | null;
  turnDetection?: string | null;
  vad?: string | null;
};

export type AgentTurnTakingPatch = {
  backchannels?: Array<string>;
  eagerness?: string;
  endpointingMode?: string;
  immediateAfterMs?: number;
  interruptionMode?: string;
  maxEndpointDelayMs?: number;
  minEndpointDelayMs?: number;
  minVoicedMs?: number;
  minWords?: number;
  resumeAfterMs?: number;
  turnDetection?: string;
  vad?: string;
};

export type AgentTurnTakingValue = {
  backchannels: Array<string>;
  closedClauseDelayMs: number;
  eagerness: string;
  endpointingMode: string;
  immediateAfterMs: number;
  interruptionMode: string;
  maxEndpointDelayMs: number;
  minEndpointDelayMs: number;
  minVoicedMs: number;
  minWords: number;
  resumeAfterMs: number;
  sentenceDelayMs: number;
  silenceDelayMs: number;
  sttMode: string;
  turnDetection: string;
  vad: string;
};

export type AnalysisCriterion = {
  criterion: string;
  pass: boolean;
  reason: string;
};

export type AnalysisResult = {
  at: string;
  criteria?: Array<AnalysisCriterion>;
  error?: string;
  fields?: {
    [key: string]: unknown;
  };
  status: string;
  success?: boolean | null;
  summary?: string;
};

export type ApiError = {
  /** A stable, machine-readable code such as memory_conflict. */
  code: string;
  /** What went wrong, for a person. */
  message: string;
};

export type AudioUsage = {
  byModel: {
    [key: string]: number;
  };
  seconds: number;
};

export type Call = {
  agent: string;
  analysis?: AnalysisResult | null;
  answerDecisionMs: number | null;
  answeredAt: string | null;
  answeredBy: string | null;
  cost?: Cost | null;
  direction: string;
  durationSeconds: number | null;
  endReason?: string | null;
  endedAt: string | null;
  id: string;
  memory?: CallMemoryReport | null;
  metrics?: Array<{
    [key: string]: unknown;
  }>;
  outcome: string | null;
  phoneNumber: string | null;
  recording?: RecordingsInfo | null;
  startedAt: string;
  status: string;
  transcript?: Array<TranscriptEntry>;
  trunk: string | null;
  usage?: Usage | null;
};

export type CallMemoryReport = {
  identity?: string;
  identityKey?: string;
  notSavedReason?: string;
  off?: string;
  read: boolean;
  recalledCalls: number;
  recalledFacts: number;
  save: boolean;
  saveError?: string;
  savePending?: boolean;
  saved: boolean;
};

export type Campaign = {
  agent: string;
  createdAt: string;
  createdBy: string;
  finishedAt: string | null;
  id: string;
  maxConcurrent: number;
  name: string;
  progress: CampaignProgress;
  retry: CampaignRetry;
  startedAt: string | null;
  status: string;
  trunk: string;
  windows: Array<CampaignWindow>;
  zone: string;
};

export type CampaignContact = {
  attempts: number;
  identities: {
    [key: string]: string;
  };
  lastCallId: string | null;
  lastOutcome: string | null;
  nextAt: string | null;
  number: string;
  reason: string | null;
  seq: number;
  state: string;
  updatedAt: string;
  variables: {
    [key: string]: string;
  };
  zones: Array<string>;
};

export type CampaignContactInput = {
  identities?: {
    [key: string]: string;
  };
  number: string;
  variables?: {
    [key: string]: string;
  };
  zone?: string;
};

export type CampaignProgress = {
  attempts: number;
  byOutcome: {
    [key: string]: number;
  };
  byState: {
    [key: string]: number;
  };
  contacts: number;
};

export type CampaignRetry = {
  busy: CampaignRetryRule;
  failed: CampaignRetryRule;
  jitter: number;
  noAnswer: CampaignRetryRule;
  voicemail: CampaignRetryRule;
};

export type CampaignRetryRule = {
  attempts: number;
  delay: unknown;
};

export type CampaignsRetryChange = {
  busy?: CampaignRetryRule | null;
  failed?: CampaignRetryRule | null;
  jitter?: number | null;
  noAnswer?: CampaignRetryRule | null;
  voicemail?: CampaignRetryRule | null;
};

export type CampaignWindow = {
  days?: Array<string>;
  end: string;
  start: string;
};

export type Cost = {
  currency: string;
  model: number | null;
  priced: number;
  speechToText: number | null;
  telephony: number | null;
  textToSpeech: number | null;
  total: number | null;
  unpriced: Array<string>;
};

export type CostTotal = {
  calls: number;
  cost: CostTotalCost;
  currency: string;
  key: string;
  sessions: number;
  usage: CostTotalUsage;
};

export type CostTotalCost = {
  model: number | null;
  priced: number;
  speechToText: number | null;
  telephony: number | null;
  text: number | null;
  textToSpeech: number | null;
  total: number | null;
  unpriced: Array<string>;
};

export type CostTotals = {
  by: string;
  rows: Array<CostTotal>;
};

export type CostTotalUsage = {
  inputTokens: number;
  outputTokens: number;
  speechToTextSeconds: number;
  telephonySeconds: number;
  textInputTokens: number;
  textOutputTokens: number;
  textToSpeechCharacters: number;
};

export type Fact = {
  content: string;
  createdAt: string;
  id: string;
  updatedAt: string;
};

export type HeldToolCall = {
  arguments: string;
  id: string;
  name: string;
};

export type Key = {
  createdAt: string;
  id: string;
  identities?: {
    [key: string]: string;
  };
  name: string;
  revokedAt: string | null;
  scopes: Array<string>;
};

export type LineUsage = {
  seconds: number;
  trunk?: string;
};

export type MemoryAddResult = {
  call: MemoryCall;
  facts: Array<Fact>;
};

export type MemoryCall = {
  durationSeconds: number | null;
  id: string;
  outcome: string | null;
  runId: string | null;
  startedAt: string;
  summary: string;
};

export type MemoryExtractionSettings = {
  activeGuidance: string;
  builtInGuidance: string;
  fallback: {
    model: string;
    reasoningEffort: string;
  };
  prompt: MemoryGuidancePrompt;
  selection: MemorySelection;
};

export type MemoryGuidancePrompt = {
  draft: string | null;
  draftSavedAt: string | null;
  published: string | null;
  publishedAt: string | null;
};

export type MemoryIdentityBinding = {
  fixedAt: string;
  identityKey: string;
  source: string;
};

export type MemoryRecallResult = {
  calls: Array<MemoryCall>;
  facts: Array<Fact>;
};

export type MemorySelection = {
  model: string | null;
  reasoningEffort: string | null;
};

export type MemorySettings = {
  agentId: string;
  binding: MemoryIdentityBinding | null;
  origins: MemorySettingsOrigins;
  overrides: MemorySettingsOverrides;
  value: MemorySettingsValue;
};

export type MemorySettingsOrigins = {
  instructions: string;
  read: string;
  save: string;
};

export type MemorySettingsOverrides = {
  instructions?: string | null;
  read?: boolean | null;
  save?: boolean | null;
};

export type MemorySettingsValue = {
  identityKey: string | null;
  instructions: string | null;
  read: boolean;
  save: boolean;
};

export type MemoryStore = {
  agent_id: string | null;
  archived_at: string | null;
  created_at: string;
  description: string;
  memory_count: number;
  memory_store_id: string;
  name: string;
  origin: string;
  revision: number;
  slug: string;
  status: string;
  total_bytes: number;
  updated_at: string;
};

export type MemoryStorePage = {
  memory_stores: Array<MemoryStore>;
  next_cursor: string | null;
};

export type ModelUsage = {
  byModel: {
    [key: string]: Tokens;
  };
  inputTokens: number;
  outputTokens: number;
};

export type NewCampaign = {
  agent: string;
  maxConcurrent?: number;
  name: string;
  retry?: CampaignsRetryChange | null;
  trunk?: string;
  windows?: Array<CampaignWindow>;
  zone?: string;
};

export type ProviderCircuitView = {
  endpoint: string;
  lastFailures: Array<ProviderFailure> | null;
  opened: number;
  openedAt: string | null;
  provider: string;
  state: string;
};

export type ProviderFailure = {
  at: string;
  reason: string;
};

export type RagChunk = {
  content: string;
  metadata?: {
    [key: string]: unknown;
  };
};

export type RagCollection = {
  chunks: number;
  createdAt: string;
  description: string;
  dimensions: number;
  documents: number;
  model: string;
  name: string;
};

export type RagCreateCollection = {
  description?: string;
  dimensions?: number;
  model?: string;
  name: string;
};

export type RagDocument = {
  attempts: number;
  chunks: number;
  collection: string;
  contentType?: string;
  createdAt: string;
  error: RagItemError | null;
  filename?: string;
  id: string;
  jobId: number | null;
  metadata: {
    [key: string]: unknown;
  };
  preview?: string;
  runId: string | null;
  sha256?: string;
  sizeBytes?: number | null;
  source: string;
  status: string;
  updatedAt: string;
};

export type RagHit = {
  chunkId: number;
  chunkIndex: number;
  collection: string;
  content: string;
  documentId: string;
  metadata: {
    [key: string]: unknown;
  };
  model: string;
  score: number;
};

export type RagIngestRequest = {
  chunks: Array<RagChunk>;
  collection?: string;
  id: string;
  metadata?: {
    [key: string]: unknown;
  };
  model?: string;
};

export type RagItemError = {
  code: string;
  message: string;
};

export type RagJob = {
  attempt: number;
  attemptedAt: string | null;
  collection?: string;
  createdAt: string;
  documentId: string;
  documentStatus?: string;
  errors: Array<RagJobError>;
  filename?: string;
  finalizedAt: string | null;
  id: number;
  maxAttempts: number;
  state: string;
};

export type RagJobError = {
  at: string;
  attempt: number;
  error: string;
};

export type RagRetrieveRequest = {
  filter?: {
    [key: string]: unknown;
  };
  hybrid?: boolean | null;
  model?: string;
  namespace?: string;
  text: string;
  topK?: number;
};

export type RagUploadResult = {
  document: RagDocument;
  job: RagJob | null;
};

export type RecordingsInfo = {
  callId: string;
  channels: Array<string>;
  createdAt: string;
  durationMs: number;
  expiresAt: string;
  format: string;
  marks: Array<RecordingsMark>;
  sampleRate: number;
  sizeBytes: number;
};

export type RecordingsMark = {
  endMs: number;
  role: string;
  startMs: number;
  turn: number;
};

export type Room = {
  agent: string;
  backend?: string;
  callId: string;
  createdAt: string;
  durationSeconds: number | null;
  endReason?: string | null;
  id: string;
  join?: RoomJoin | null;
  memory?: CallMemoryReport | null;
  outcome: string | null;
  status: string;
  transcript: Array<TranscriptEntry>;
};

export type RoomJoin = {
  expiresAt: string;
  identity?: string;
  offerUrl?: string;
  token?: string;
  url?: string;
};

export type Run = {
  agentId?: string;
  costUsd: number | null;
  durationMs: number | null;
  errorCode?: string;
  finishedAt: string | null;
  id: string;
  inputTokens: number;
  kind: string;
  metadata: {
    [key: string]: unknown;
  };
  model?: string;
  outputTokens: number;
  startedAt: string;
  status: string;
};

export type Session = {
  agent: string;
  createdAt: string;
  id: string;
  inputTokens: number;
  kind: string;
  lastActivityAt: string;
  outputTokens: number;
  preview: string;
  status: string;
  turns: number;
};

export type SessionCost = {
  agentId: string;
  cost: Cost;
  sessionId: string;
  turns: number;
  usage: Usage;
};

export type SessionDetail = {
  agent: string;
  createdAt: string;
  id: string;
  inputTokens: number;
  kind: string;
  lastActivityAt: string;
  outputTokens: number;
  pending: HeldToolCall | null;
  preview: string;
  status: string;
  transcript: Array<SessionTurn>;
  turns: number;
};

export type SessionTurn = {
  at: string;
  durationMs: number;
  inputTokens: number;
  outputTokens: number;
  reply: string;
  runId: string;
  status: string;
  turn: number;
  user: string;
};

export type StoreEntry = {
  byte_size?: number | null;
  count?: number | null;
  memory_id?: string | null;
  path: string;
  summary?: string | null;
  type: string;
  updated_at?: string | null;
};

export type StoreHit = {
  byte_size: number;
  memory_id: string;
  memory_store_id: string;
  path: string;
  rank: number;
  summary: string;
  updated_at: string;
};

export type StoreListing = {
  entries: Array<StoreEntry>;
  next_cursor: string | null;
};

export type StoreMemory = {
  byte_size: number;
  content: string;
  content_sha256: string;
  created_at: string;
  head_version_id: string;
  memory_id: string;
  memory_store_id: string;
  path: string;
  status: string;
  summary: string;
  updated_at: string;
};

export type StoresAgentMemories = {
  memories: Array<StoresMemoryItem>;
  next_cursor: string | null;
  topics: Array<StoresTopic>;
};

export type StoresAgentMemory = {
  agent_id: string;
  agent_name: string;
  effective_model: string;
  failed_session_count: number;
  last_checked_at: string | null;
  last_updated_at: string | null;
  memory_count: number;
  memory_store_id: string;
  next_retry_at: string | null;
  pending_session_count: number;
  revision: number;
  state: string;
  total_bytes: number;
};

export type StoreSearchResult = {
  memories: Array<StoreHit>;
  next_cursor: string | null;
};

export type StoresErrorInfo = {
  code: string;
  message: string;
};

export type StoresLearning = {
  memory_model_ref: string | null;
};

export type StoresMemoryItem = {
  byte_size: number;
  created_at: string;
  memory_id: string;
  path: string;
  summary: string;
  topic: string | null;
  updated_at: string;
};

export type StoresReflection = {
  added: number;
  agent_id: string;
  attempt: number;
  changes: unknown;
  driver_session_id: string | null;
  error: StoresErrorInfo | null;
  finished_at: string | null;
  learned_from_session_ids: Array<string>;
  memory_store_id: string;
  merged: number;
  model: string;
  reason: string;
  reflection_id: string;
  report_count: number;
  reports_read?: Array<StoresReportInfo>;
  retired: number;
  run_id: string;
  started_at: string;
  status: string;
  summary: string | null;
  triggered_by: string;
  updated: number;
};

export type StoresReflectionPage = {
  next_cursor: string | null;
  reflections: Array<StoresReflection>;
};

export type StoresReportInfo = {
  created_at: string;
  from_turn: number;
  report: string;
  report_id: string;
  session_id: string;
  through_turn: number;
  useful: boolean;
};

export type StoresTopic = {
  count: number;
  topic: string;
};

export type StoreVersion = {
  author_id: string;
  author_kind: string;
  byte_size: number | null;
  content_sha256: string | null;
  created_at: string;
  evidence_session_ids: Array<string>;
  memory_id: string;
  memory_store_id: string;
  memory_version_id: string;
  operation: string;
  path: string;
  rationale: string | null;
  redacted: boolean;
  redacted_at: string | null;
  redacted_by: string | null;
  reflection_id: string | null;
  restored_from_version_id: string | null;
  summary: string;
};

export type StoreVersionDetail = {
  author_id: string;
  author_kind: string;
  byte_size: number | null;
  content: string | null;
  content_sha256: string | null;
  created_at: string;
  evidence_session_ids: Array<string>;
  memory_id: string;
  memory_store_id: string;
  memory_version_id: string;
  operation: string;
  path: string;
  rationale: string | null;
  redacted: boolean;
  redacted_at: string | null;
  redacted_by: string | null;
  reflection_id: string | null;
  restored_from_version_id: string | null;
  summary: string;
};

export type StoreVersionPage = {
  memory_versions: Array<StoreVersion>;
  next_cursor: string | null;
};

export type TextUsage = {
  byModel: {
    [key: string]: number;
  };
  characters: number;
};

export type Tokens = {
  inputTokens: number;
  outputTokens: number;
};

export type TranscriptEntry = {
  at: string;
  cut?: boolean;
  role: string;
  text: string;
  turn: number;
};

export type Usage = {
  model: ModelUsage;
  speechToText: AudioUsage;
  telephony: LineUsage;
  textToSpeech: TextUsage;
};

export type WebhooksAttempt = {
  at: string;
  attempt: number;
  error: string | null;
  latencyMs: number;
  replay: boolean;
  statusCode: number | null;
};

export type WebhooksDelivery = {
  attempts: Array<WebhooksAttempt>;
  createdAt: string;
  eventId: string;
  eventType: string;
  id: string;
  status: string;
  subscriptionId: string;
  updatedAt: string;
};

export type WebhooksNewSubscription = {
  description: string;
  events: Array<string>;
  includeTranscript: boolean;
  url: string;
};

export type WebhooksSubscription = {
  createdAt: string;
  createdBy: string;
  description: string;
  events: Array<string>;
  id: string;
  includeTranscript: boolean;
  secret?: string;
  url: string;
};

/** Every operation of the API: its route, request body, query and the data of its success answer. */
export interface Operations {
  /** POST /api/voice/campaigns/{id}/contacts: Add contacts, all or none: JSON ({contacts: [...]}) or text/csv with a header (number, zone, identity.NAME, and variable columns); bad lines are named. */
  addCampaignContacts: {
    method: "POST";
    path: "/api/voice/campaigns/{id}/contacts";
    body: {
      contacts: Array<CampaignContactInput>;
    };
    query: never;
    data: {
      added: number;
    };
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores/{store}/archive: Make a curated store read-only. */
  archiveStore: {
    method: "POST";
    path: "/api/memory_stores/{store}/archive";
    body: never;
    query: never;
    data: void;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/campaigns/{id}/cancel: End a campaign: waiting contacts are cancelled; calls up go on without retries. */
  cancelCampaign: {
    method: "POST";
    path: "/api/voice/campaigns/{id}/cancel";
    body: never;
    query: never;
    data: Campaign;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/rag/jobs/{id}/cancel: Cancel an ingest job. */
  cancelIngestJob: {
    method: "POST";
    path: "/api/rag/jobs/{id}/cancel";
    body: never;
    query: never;
    data: RagJob;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_ingest_unavailable" | "rag_invalid_request" | "rag_job_not_found" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/costs: What calls and text turns used and cost, totalled per agent or per day (UTC). */
  costTotals: {
    method: "GET";
    path: "/api/costs";
    body: never;
    query: { by?: string; agent?: string; from?: string; to?: string; };
    data: CostTotals;
    codes: "costs_unavailable" | "forbidden" | "identity_forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/campaigns: Create a draft campaign: an agent, a trunk, calling windows, a cap on calls up at once and a retry policy. */
  createCampaign: {
    method: "POST";
    path: "/api/voice/campaigns";
    body: NewCampaign;
    query: never;
    data: Campaign;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/rag/collections: Create a collection. */
  createCollection: {
    method: "POST";
    path: "/api/rag/collections";
    body: RagCreateCollection;
    query: never;
    data: RagCollection;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_collection_exists" | "rag_invalid_request" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/keys: Create a key; its secret is shown once. A key grants only scopes it holds. */
  createKey: {
    method: "POST";
    path: "/api/keys";
    body: {
      anyIdentity?: boolean;
      /** Identity field name to value. */
      identities?: {
        [key: string]: string;
      };
      /** 1 to 100 printable characters; names stay taken after a revoke. */
      name: string;
      scopes: Array<string>;
    };
    query: never;
    data: {
      key: Key;
      secret: string;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "key_exists" | "key_identity_required" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores/{store}/memories: Add a memory; an existing path is refused. */
  createMemory: {
    method: "POST";
    path: "/api/memory_stores/{store}/memories";
    body: {
      content: string;
      path: string;
      summary: string;
    };
    query: never;
    data: StoreMemory;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/rooms: Open a browser test call for an agent. */
  createRoom: {
    method: "POST";
    path: "/api/voice/rooms";
    body: {
      agent: string;
      /** Identity field name to value. */
      identities?: {
        [key: string]: string;
      };
    };
    query: never;
    data: Room;
    codes: "agent_not_found" | "forbidden" | "identity_forbidden" | "internal" | "invalid_identities" | "invalid_request" | "rooms_at_capacity" | "rooms_backend_failed" | "rooms_invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores: Create a curated memory store. */
  createStore: {
    method: "POST";
    path: "/api/memory_stores";
    body: {
      agent_id?: string | null;
      description?: string;
      name: string;
    };
    query: never;
    data: MemoryStore;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/webhooks: Subscribe a URL to event types; the answer holds the signing secret, shown once. */
  createWebhook: {
    method: "POST";
    path: "/api/webhooks";
    body: WebhooksNewSubscription;
    query: never;
    data: WebhooksSubscription;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** POST /api/sessions/{id}/decision: Approve or reject the held tool call; the rest of the turn runs. */
  decideSession: {
    method: "POST";
    path: "/api/sessions/{id}/decision";
    body: {
      decision: "approve" | "reject";
      reason?: string;
    };
    query: never;
    data: Record<string, unknown>;
    codes: "forbidden" | "internal" | "invalid_request" | "no_decision_pending" | "provider_failed" | "provider_timeout" | "session_busy" | "session_not_found" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/voice/campaigns/{id}: Delete a campaign that is not running, with its contacts (its calls stay). */
  deleteCampaign: {
    method: "DELETE";
    path: "/api/voice/campaigns/{id}";
    body: never;
    query: never;
    data: void;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/rag/documents/{id}: Delete a document and its chunks. */
  deleteDocument: {
    method: "DELETE";
    path: "/api/rag/documents/{id}";
    body: never;
    query: never;
    data: {
      deleted: boolean;
      id: string;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "rag_document_not_found" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/memory_stores/{store}/memories/{memory}: Remove a memory from every read path. */
  deleteMemory: {
    method: "DELETE";
    path: "/api/memory_stores/{store}/memories/{memory}";
    body: never;
    query: never;
    data: void;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/memory_stores/{store}: Delete a curated store and its memories. */
  deleteStore: {
    method: "DELETE";
    path: "/api/memory_stores/{store}";
    body: never;
    query: never;
    data: void;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/webhooks/{id}: Delete a subscription, its deliveries and their log. */
  deleteWebhook: {
    method: "DELETE";
    path: "/api/webhooks/{id}";
    body: never;
    query: never;
    data: {
      deleted: boolean;
      id: string;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** POST /api/voice/calls: Place an outbound phone call through a trunk. */
  dialCall: {
    method: "POST";
    path: "/api/voice/calls";
    body: {
      agent: string;
      answeringMachine?: {
        /** off, outbound or all. */
        detect?: string;
        /** talk or hangup. */
        menu?: string;
        /** Said after a voicemail's beep; {field} placeholders take the call's identities. */
        message?: string;
        /** hangup or message. */
        voicemail?: string;
      };
      /** Identity field name to value. */
      identities?: {
        [key: string]: string;
      };
      /** E.164 number. */
      to: string;
      trunk?: string;
    };
    query: never;
    data: {
      callId: string;
    };
    codes: "agent_not_found" | "forbidden" | "identity_forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "voice_at_capacity" | "voice_dial_failed" | "voice_invalid_request" | "voice_no_trunk" | "voice_unavailable";
  };
  /** GET /api/rag/originals/{id}: The uploaded file itself. */
  downloadOriginal: {
    method: "GET";
    path: "/api/rag/originals/{id}";
    body: never;
    query: never;
    data: void;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_document_not_found" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/voice/rooms/{id}: End a browser call. */
  endRoom: {
    method: "DELETE";
    path: "/api/voice/rooms/{id}";
    body: never;
    query: never;
    data: {
      id: string;
      status: string;
    };
    codes: "forbidden" | "identity_forbidden" | "internal" | "invalid_request" | "room_ended" | "room_not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents/{agent}/memory: An agent's learned memory store. */
  getAgentMemory: {
    method: "GET";
    path: "/api/agents/{agent}/memory";
    body: never;
    query: never;
    data: StoresAgentMemory;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents/{name}/models: An agent's model and speech chains, with Studio's overrides. */
  getAgentModels: {
    method: "GET";
    path: "/api/agents/{name}/models";
    body: never;
    query: never;
    data: AgentChainsView;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents/{name}/turntaking: An agent's turn-taking settings in force (VAD, endpointing, turn detection, interruptions), with Studio's overrides and each one's origin. */
  getAgentTurnTaking: {
    method: "GET";
    path: "/api/agents/{name}/turntaking";
    body: never;
    query: never;
    data: AgentTurnTaking;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/calls/{id}: One call with its heard transcript. */
  getCall: {
    method: "GET";
    path: "/api/voice/calls/{id}";
    body: never;
    query: never;
    data: Call;
    codes: "call_not_found" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/calls/{id}/recording: The call's recording: two channels, the caller left and the agent right. */
  getCallRecording: {
    method: "GET";
    path: "/api/voice/calls/{id}/recording";
    body: never;
    query: never;
    data: void;
    codes: "call_not_found" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/campaigns/{id}: One campaign with its progress (contacts by state and by outcome). */
  getCampaign: {
    method: "GET";
    path: "/api/voice/campaigns/{id}";
    body: never;
    query: never;
    data: Campaign;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/capabilities: What this box offers, for SDKs to negotiate. */
  getCapabilities: {
    method: "GET";
    path: "/api/capabilities";
    body: never;
    query: never;
    data: {
      capabilities: Array<string>;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/rag/documents/{id}: One document. */
  getDocument: {
    method: "GET";
    path: "/api/rag/documents/{id}";
    body: never;
    query: never;
    data: RagDocument;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_document_not_found" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/rag/jobs/{id}: One ingest job. */
  getIngestJob: {
    method: "GET";
    path: "/api/rag/jobs/{id}";
    body: never;
    query: never;
    data: RagJob;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_job_not_found" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/keys/self: The key making the request and what it may do. */
  getKeySelf: {
    method: "GET";
    path: "/api/keys/self";
    body: never;
    query: never;
    data: {
      allScopes: Array<string>;
      anyIdentity: boolean;
      createdAt?: string;
      identities?: {
        [key: string]: string;
      } | null;
      name: string;
      personScopes: Array<string>;
      scopes: Array<string>;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents/{agent}/learning: An agent's learning settings. */
  getLearning: {
    method: "GET";
    path: "/api/agents/{agent}/learning";
    body: never;
    query: never;
    data: StoresLearning;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}/memories/{memory}: A memory by id. */
  getMemory: {
    method: "GET";
    path: "/api/memory_stores/{store}/memories/{memory}";
    body: never;
    query: never;
    data: StoreMemory;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}/memory: A memory by its path. */
  getMemoryByPath: {
    method: "GET";
    path: "/api/memory_stores/{store}/memory";
    body: never;
    query: { path?: string; };
    data: StoreMemory;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/system/memory-extraction: The extraction model selection and guidance. */
  getMemoryExtraction: {
    method: "GET";
    path: "/api/system/memory-extraction";
    body: never;
    query: never;
    data: MemoryExtractionSettings;
    codes: "forbidden" | "internal" | "invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory/settings/{agentId}: An agent's memory settings: overrides, values in force and their origins. */
  getMemorySettings: {
    method: "GET";
    path: "/api/memory/settings/{agentId}";
    body: never;
    query: never;
    data: MemorySettings;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/openapi.json: This document (no key needed). */
  getOpenAPI: {
    method: "GET";
    path: "/api/openapi.json";
    body: never;
    query: never;
    data: {
      openapi: string;
      paths: Record<string, unknown>;
    };
    codes: "invalid_request";
  };
  /** GET /api/reflections/{reflection}: One learning run. */
  getReflection: {
    method: "GET";
    path: "/api/reflections/{reflection}";
    body: never;
    query: never;
    data: StoresReflection;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/rooms/{id}: One browser call. */
  getRoom: {
    method: "GET";
    path: "/api/voice/rooms/{id}";
    body: never;
    query: never;
    data: Room;
    codes: "forbidden" | "identity_forbidden" | "internal" | "invalid_request" | "room_not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/runs/{id}: One run. */
  getRun: {
    method: "GET";
    path: "/api/runs/{id}";
    body: never;
    query: never;
    data: Run;
    codes: "forbidden" | "internal" | "invalid_request" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/sessions/{id}: A session with its transcript and any held tool call. */
  getSession: {
    method: "GET";
    path: "/api/sessions/{id}";
    body: never;
    query: never;
    data: SessionDetail;
    codes: "forbidden" | "internal" | "invalid_request" | "session_not_found" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/costs/sessions/{id}: What a text session's turns used and cost. */
  getSessionCost: {
    method: "GET";
    path: "/api/costs/sessions/{id}";
    body: never;
    query: never;
    data: SessionCost;
    codes: "costs_unavailable" | "forbidden" | "internal" | "invalid_request" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}: One store. */
  getStore: {
    method: "GET";
    path: "/api/memory_stores/{store}";
    body: never;
    query: never;
    data: MemoryStore;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}/memory_versions/{version}: One version with its content unless redacted. */
  getVersion: {
    method: "GET";
    path: "/api/memory_stores/{store}/memory_versions/{version}";
    body: never;
    query: never;
    data: StoreVersionDetail;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/webhooks/{id}: One subscription (without its secret). */
  getWebhook: {
    method: "GET";
    path: "/api/webhooks/{id}";
    body: never;
    query: never;
    data: WebhooksSubscription;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** GET /api/webhooks/{id}/deliveries/{delivery}: One delivery with its attempts. */
  getWebhookDelivery: {
    method: "GET";
    path: "/api/webhooks/{id}/deliveries/{delivery}";
    body: never;
    query: never;
    data: WebhooksDelivery;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** POST /api/voice/calls/{id}/hangup: End a ringing or running call from outside. */
  hangupCall: {
    method: "POST";
    path: "/api/voice/calls/{id}/hangup";
    body: never;
    query: never;
    data: {
      id: string;
      status: string;
    };
    codes: "call_ended" | "call_not_found" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/activity: The operator activity log. */
  listActivity: {
    method: "GET";
    path: "/api/activity";
    body: never;
    query: { limit?: number; subject?: string; };
    data: Array<{
      action: string;
      actor: string;
      at: string;
      fields: Array<string> | null;
      id: number;
      subject: string;
    }>;
    codes: "forbidden" | "internal" | "invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents/{agent}/memories: An agent's learned memories. */
  listAgentMemories: {
    method: "GET";
    path: "/api/agents/{agent}/memories";
    body: never;
    query: { limit?: number; cursor?: string; };
    data: StoresAgentMemories;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents/{agent}/memory/activity: Changes to an agent's learned memory. */
  listAgentMemoryActivity: {
    method: "GET";
    path: "/api/agents/{agent}/memory/activity";
    body: never;
    query: { limit?: number; cursor?: string; };
    data: Record<string, unknown>;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/agent_memory_summaries: Every agent's learned memory at a glance. */
  listAgentMemorySummaries: {
    method: "GET";
    path: "/api/agent_memory_summaries";
    body: never;
    query: never;
    data: {
      agents: Array<unknown>;
    };
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/agents: Every declared agent with its model chains in force. */
  listAgents: {
    method: "GET";
    path: "/api/agents";
    body: never;
    query: never;
    data: Array<{
      fallbacks: Array<string>;
      /** The agent's phone line as its config sets it: answeringMachine, keypad, transferTargets, recording, analysisFields, analysisCriteria. */
      line?: Record<string, unknown>;
      model: string;
      name: string;
      origins?: Record<string, unknown>;
      stt?: Array<string> | null;
      tts?: Array<string> | null;
    }>;
    codes: "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/calls: Calls, newest first, without transcripts. */
  listCalls: {
    method: "GET";
    path: "/api/voice/calls";
    body: never;
    query: { limit?: number; before?: string; direction?: string; agent?: string; status?: string; outcome?: string; number?: string; from?: string; to?: string; success?: string; "field.NAME"?: string; };
    data: Array<Call>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "voice_invalid_request";
  };
  /** GET /api/voice/campaigns/{id}/contacts: A campaign's contacts in upload order. */
  listCampaignContacts: {
    method: "GET";
    path: "/api/voice/campaigns/{id}/contacts";
    body: never;
    query: { state?: string; after?: number; limit?: number; };
    data: Array<CampaignContact>;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/campaigns: Campaigns, newest first, each with its progress. */
  listCampaigns: {
    method: "GET";
    path: "/api/voice/campaigns";
    body: never;
    query: never;
    data: Array<Campaign>;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/rag/collections: Every collection with its counts. */
  listCollections: {
    method: "GET";
    path: "/api/rag/collections";
    body: never;
    query: never;
    data: Array<RagCollection>;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/rag/collections/{name}/documents: A collection's documents. */
  listDocuments: {
    method: "GET";
    path: "/api/rag/collections/{name}/documents";
    body: never;
    query: { status?: string; before?: string; limit?: number; offset?: number; filter?: string; };
    data: Array<RagDocument>;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_collection_not_found" | "rag_invalid_request" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/rag/jobs: Background ingest jobs. */
  listIngestJobs: {
    method: "GET";
    path: "/api/rag/jobs";
    body: never;
    query: { state?: string; collection?: string; limit?: number; };
    data: Array<RagJob>;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_invalid_request" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/keys: Every key, live and revoked (never a secret). */
  listKeys: {
    method: "GET";
    path: "/api/keys";
    body: never;
    query: never;
    data: Array<Key>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}/memories: One level of a store, like a directory. */
  listMemories: {
    method: "GET";
    path: "/api/memory_stores/{store}/memories";
    body: never;
    query: { path_prefix?: string; limit?: number; cursor?: string; };
    data: StoreListing;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/system/models: The model ids the configuration knows of. */
  listModels: {
    method: "GET";
    path: "/api/system/models";
    body: never;
    query: never;
    data: unknown;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/system/providers: The model providers' circuits and their recent failures. */
  listProviders: {
    method: "GET";
    path: "/api/system/providers";
    body: never;
    query: never;
    data: Array<ProviderCircuitView>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/reflections: Learning runs, newest first. */
  listReflections: {
    method: "GET";
    path: "/api/reflections";
    body: never;
    query: { limit?: number; cursor?: string; agent_id?: string; };
    data: StoresReflectionPage;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/voice/rooms: The browser calls this box carries. */
  listRooms: {
    method: "GET";
    path: "/api/voice/rooms";
    body: never;
    query: never;
    data: Array<Room>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/runs: Run history, newest first. */
  listRuns: {
    method: "GET";
    path: "/api/runs";
    body: never;
    query: { limit?: number; before?: string; kind?: string; agent?: string; status?: string; };
    data: Array<Run>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/sessions: Sessions, newest activity first. */
  listSessions: {
    method: "GET";
    path: "/api/sessions";
    body: never;
    query: { limit?: number; before?: string; agent?: string; status?: string; };
    data: Array<Session>;
    codes: "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores: Memory stores. */
  listStores: {
    method: "GET";
    path: "/api/memory_stores";
    body: never;
    query: { limit?: number; cursor?: string; agent_id?: string; origin?: string; status?: string; include_archived?: boolean; };
    data: MemoryStorePage;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}/memory_versions: A store's history, newest first. */
  listVersions: {
    method: "GET";
    path: "/api/memory_stores/{store}/memory_versions";
    body: never;
    query: { memory_id?: string; limit?: number; cursor?: string; };
    data: StoreVersionPage;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/webhooks/{id}/deliveries: A subscription's deliveries, newest first, each with its attempts. */
  listWebhookDeliveries: {
    method: "GET";
    path: "/api/webhooks/{id}/deliveries";
    body: never;
    query: { limit?: number; status?: string; type?: string; };
    data: Array<WebhooksDelivery>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** GET /api/webhooks/event-types: The event types a subscription may ask for. */
  listWebhookEventTypes: {
    method: "GET";
    path: "/api/webhooks/event-types";
    body: never;
    query: never;
    data: Array<string>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** GET /api/webhooks: Webhook subscriptions, newest first (without secrets). */
  listWebhooks: {
    method: "GET";
    path: "/api/webhooks";
    body: never;
    query: never;
    data: Array<WebhooksSubscription>;
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** POST /api/memory/add: Update a person's facts from a conversation and store one call record. */
  memoryAdd: {
    method: "POST";
    path: "/api/memory/add";
    body: {
      /** The agent's catalog name. */
      agentId: string;
      call?: {
        durationSeconds?: number;
        outcome?: string;
        runId?: string;
        startedAt?: string;
      };
      /** A transcript string or an array of OpenAI-shaped chat messages. */
      content: string | Array<{
        content?: unknown;
        role: string;
      }>;
      instructions?: string;
      model?: string;
      reasoningEffort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh";
      /** An opaque person id, preserved exactly. */
      userId: string;
    };
    query: never;
    data: MemoryAddResult;
    codes: "agent_not_found" | "forbidden" | "identity_forbidden" | "internal" | "invalid_identities" | "invalid_request" | "memory_conflict" | "memory_invalid_model_output" | "memory_invalid_request" | "memory_model_failed" | "memory_persist_failed" | "memory_schema_missing" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory/delete-all: Delete every fact and call record of one person for one agent. */
  memoryDeleteAll: {
    method: "POST";
    path: "/api/memory/delete-all";
    body: {
      agentId: string;
      userId: string;
    };
    query: never;
    data: {
      deleted: number;
    };
    codes: "agent_not_found" | "forbidden" | "identity_forbidden" | "internal" | "invalid_identities" | "invalid_request" | "memory_invalid_request" | "memory_schema_missing" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory/recall: Every fact of a person and their newest call records first. */
  memoryRecall: {
    method: "POST";
    path: "/api/memory/recall";
    body: {
      agentId: string;
      calls?: number;
      userId: string;
    };
    query: never;
    data: MemoryRecallResult;
    codes: "agent_not_found" | "forbidden" | "identity_forbidden" | "internal" | "invalid_identities" | "invalid_request" | "memory_invalid_request" | "memory_schema_missing" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/rooms/{id}/offer: The browser's SDP offer, answered by the embedded peer. */
  offerRoom: {
    method: "POST";
    path: "/api/voice/rooms/{id}/offer";
    body: {
      sdp: string;
      type: "offer";
    };
    query: never;
    data: {
      sdp: string;
      type: string;
    };
    codes: "forbidden" | "identity_forbidden" | "internal" | "invalid_request" | "room_ended" | "room_not_found" | "rooms_already_joined" | "rooms_backend_failed" | "rooms_invalid_request" | "rooms_wrong_backend" | "unauthorized" | "unavailable";
  };
  /** PATCH /api/memory_stores/{store}: Rename or redescribe a store. */
  patchStore: {
    method: "PATCH";
    path: "/api/memory_stores/{store}";
    body: {
      description?: string;
      name?: string;
    };
    query: never;
    data: MemoryStore;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/campaigns/{id}/pause: Stop new attempts (calls up go on). */
  pauseCampaign: {
    method: "POST";
    path: "/api/voice/campaigns/{id}/pause";
    body: never;
    query: never;
    data: Campaign;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/system/memory-extraction/prompt/publish: Publish the guidance draft. */
  publishMemoryExtractionPrompt: {
    method: "POST";
    path: "/api/system/memory-extraction/prompt/publish";
    body: never;
    query: never;
    data: MemoryExtractionSettings;
    codes: "forbidden" | "internal" | "invalid_request" | "memory_invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** PUT /api/agents/{name}/models: Override an agent's chains. */
  putAgentModels: {
    method: "PUT";
    path: "/api/agents/{name}/models";
    body: {
      model?: Array<string> | null;
      stt?: Array<string> | null;
      tts?: Array<string> | null;
    };
    query: never;
    data: AgentChainsView;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** PUT /api/agents/{name}/turntaking: Override some of an agent's turn-taking settings (durations in milliseconds); the others stay. */
  putAgentTurnTaking: {
    method: "PUT";
    path: "/api/agents/{name}/turntaking";
    body: AgentTurnTakingPatch;
    query: never;
    data: AgentTurnTaking;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** PUT /api/system/memory-extraction: Select the extraction model. */
  putMemoryExtraction: {
    method: "PUT";
    path: "/api/system/memory-extraction";
    body: {
      model?: string | null;
      reasoningEffort?: string | null;
    };
    query: never;
    data: MemoryExtractionSettings;
    codes: "forbidden" | "internal" | "invalid_request" | "memory_invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** PUT /api/system/memory-extraction/prompt: Save the guidance draft. */
  putMemoryExtractionPrompt: {
    method: "PUT";
    path: "/api/system/memory-extraction/prompt";
    body: {
      text: string;
    };
    query: never;
    data: MemoryExtractionSettings;
    codes: "forbidden" | "internal" | "invalid_request" | "memory_invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** PUT /api/memory/settings/{agentId}: Save one or more fields; omitted fields stay unchanged. */
  putMemorySettings: {
    method: "PUT";
    path: "/api/memory/settings/{agentId}";
    body: {
      identityKey?: string;
      instructions?: string;
      read?: boolean;
      save?: boolean;
    };
    query: never;
    data: MemorySettings;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "memory_identity_key_fixed" | "memory_invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/rag/ingest: Store a document's chunks; the same id replaces its chunks. */
  ragIngest: {
    method: "POST";
    path: "/api/rag/ingest";
    body: RagIngestRequest;
    query: never;
    data: RagDocument;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_collection_not_found" | "rag_document_conflict" | "rag_embedding_failed" | "rag_invalid_request" | "rag_model_mismatch" | "rag_provider_not_configured" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/rag/retrieve: The chunks of one collection closest to a text, each with a score from 0 to 1. */
  ragRetrieve: {
    method: "POST";
    path: "/api/rag/retrieve";
    body: RagRetrieveRequest;
    query: never;
    data: Array<RagHit>;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_collection_not_found" | "rag_embedding_failed" | "rag_invalid_request" | "rag_model_mismatch" | "rag_provider_not_configured" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores/{store}/memory_versions/{version}/redact: Remove a version's content for good. */
  redactVersion: {
    method: "POST";
    path: "/api/memory_stores/{store}/memory_versions/{version}/redact";
    body: never;
    query: never;
    data: void;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/webhooks/{id}/deliveries/{delivery}/replay: Send a delivery again now, once, with the same event id. */
  replayWebhookDelivery: {
    method: "POST";
    path: "/api/webhooks/{id}/deliveries/{delivery}/replay";
    body: never;
    query: never;
    data: {
      id: string;
      replayed: boolean;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable" | "webhook_invalid_request" | "webhook_not_found" | "webhook_unavailable";
  };
  /** DELETE /api/agents/{name}/models: Remove an agent's chain overrides. */
  resetAgentModels: {
    method: "DELETE";
    path: "/api/agents/{name}/models";
    body: never;
    query: { field?: string; };
    data: AgentChainsView;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/agents/{name}/turntaking: Remove an agent's turn-taking overrides. */
  resetAgentTurnTaking: {
    method: "DELETE";
    path: "/api/agents/{name}/turntaking";
    body: never;
    query: { field?: string; };
    data: AgentTurnTaking;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "storage_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/system/memory-extraction/prompt: Restore the built-in guidance. */
  resetMemoryExtractionPrompt: {
    method: "DELETE";
    path: "/api/system/memory-extraction/prompt";
    body: never;
    query: never;
    data: MemoryExtractionSettings;
    codes: "forbidden" | "internal" | "invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/memory/settings/{agentId}: Remove one override (?field=) or all of them. */
  resetMemorySettings: {
    method: "DELETE";
    path: "/api/memory/settings/{agentId}";
    body: never;
    query: { field?: string; };
    data: MemorySettings;
    codes: "agent_not_found" | "forbidden" | "internal" | "invalid_request" | "memory_invalid_request" | "memory_unavailable" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores/{store}/memory_versions/{version}/restore: Write a version's content back as a new version. */
  restoreVersion: {
    method: "POST";
    path: "/api/memory_stores/{store}/memory_versions/{version}/restore";
    body: never;
    query: never;
    data: StoreMemory;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/campaigns/{id}/resume: Run a paused campaign again. */
  resumeCampaign: {
    method: "POST";
    path: "/api/voice/campaigns/{id}/resume";
    body: never;
    query: never;
    data: Campaign;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/rag/jobs/{id}/retry: Retry a failed ingest job. */
  retryIngestJob: {
    method: "POST";
    path: "/api/rag/jobs/{id}/retry";
    body: never;
    query: never;
    data: RagJob;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_ingest_unavailable" | "rag_invalid_request" | "rag_job_not_found" | "rag_unavailable" | "unauthorized" | "unavailable";
  };
  /** DELETE /api/keys/{name}: Revoke a key. */
  revokeKey: {
    method: "DELETE";
    path: "/api/keys/{name}";
    body: never;
    query: never;
    data: {
      revoked: string;
    };
    codes: "forbidden" | "internal" | "invalid_request" | "key_not_found" | "unauthorized" | "unavailable";
  };
  /** GET /api/memory_stores/{store}/memories/search: Memories by content. */
  searchMemories: {
    method: "GET";
    path: "/api/memory_stores/{store}/memories/search";
    body: never;
    query: { query?: string; limit?: number; };
    data: StoreSearchResult;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** PATCH /api/agents/{agent}/learning: Choose the memory model (or null). */
  setLearning: {
    method: "PATCH";
    path: "/api/agents/{agent}/learning";
    body: {
      memory_model_ref?: string | null;
    };
    query: never;
    data: StoresLearning;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/voice/campaigns/{id}/start: Start a draft campaign that has contacts. */
  startCampaign: {
    method: "POST";
    path: "/api/voice/campaigns/{id}/start";
    body: never;
    query: never;
    data: Campaign;
    codes: "campaign_conflict" | "campaign_invalid_request" | "campaign_not_found" | "campaign_unavailable" | "forbidden" | "internal" | "invalid_request" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores/{store}/memories/{memory}: Change a memory; content_sha256 guards a concurrent change. */
  updateMemory: {
    method: "POST";
    path: "/api/memory_stores/{store}/memories/{memory}";
    body: {
      content?: string;
      content_sha256?: string;
      path?: string;
      summary?: string;
    };
    query: never;
    data: StoreMemory;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/memory_stores/{store}: Rename or redescribe a store. */
  updateStore: {
    method: "POST";
    path: "/api/memory_stores/{store}";
    body: {
      description?: string;
      name?: string;
    };
    query: never;
    data: MemoryStore;
    codes: "conflict" | "content_sha256_mismatch" | "forbidden" | "internal" | "invalid_request" | "memory_limit_reached" | "memory_path_exists" | "memory_version_current" | "not_found" | "unauthorized" | "unavailable";
  };
  /** POST /api/rag/collections/{name}/documents: Upload a .txt, .md or .pdf file (up to 25 MB); ingest runs in the background. */
  uploadDocument: {
    method: "POST";
    path: "/api/rag/collections/{name}/documents";
    body: never;
    query: never;
    data: RagUploadResult;
    codes: "forbidden" | "internal" | "invalid_request" | "rag_collection_not_found" | "rag_document_conflict" | "rag_file_too_large" | "rag_ingest_unavailable" | "rag_invalid_request" | "rag_unavailable" | "rag_unsupported_type" | "unauthorized" | "unavailable";
  };
}

/** Every error code the API answers. */
export type ErrorCode = Operations[keyof Operations]['codes'];
