export { handleCommand, handlePreparedCommand, type HandleOptions, type HandledCommand, type PreparedCommand } from './command-handler.js';
export { foldEvents, type Decider } from './decider.js';
export { isVersionConflict, versionConflict, type AppendResult, type AppendToStreamOptions, type EventStore, type ReadStreamOptions, type StoredStream } from './event-store.js';
export { inMemoryEventStore } from './in-memory-event-store.js';
export { jetStreamEventStore, storedAppendSchema, type JetStreamEventStoreOptions } from './jetstream-event-store.js';
export { readAppendsMatching, type ReadAppendsMatchingOptions, type StoredAppend } from './read-matching.js';
