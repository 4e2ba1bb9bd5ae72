// Package webhooks tells the operator's systems what happened in the box:
// subscriptions to event types (call.started, call.answered, call.ended,
// memory.saved, rag.document.ingested, ...), each event delivered to every
// subscription that asked for its type, signed with the Standard Webhooks
// scheme, by River jobs that retry with backoff for 24 hours.
//
// An event is recorded in the transaction of the change it reports (Emit
// with that transaction), so it exists exactly when the change committed;
// its deliveries are jobs inserted in that same transaction. Nothing on the
// path of a call waits for a receiver: the call's own statement gains one
// insert, and a slow or dead receiver only holds a delivery worker, for at
// most the delivery timeout.
//
// A receiver checks the signature with Verify (or any Standard Webhooks
// library) and deduplicates on the webhook-id header, which is the event's
// id and stays the same on every retry and replay.
//
//	svc, err := webhooks.New(webhooks.Config{Pool: pool, Logger: log})
//	svc.Register(apiServer)           // /api/webhooks
//	svc.AddWorkers(registry)          // before the River client is built
//	err = svc.Emit(ctx, tx, webhooks.CallEnded, data, content)
package webhooks
