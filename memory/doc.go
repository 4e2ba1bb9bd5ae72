// Package memory keeps a small, explicit memory for each person an agent
// talks to: facts and call records in Postgres, updated by one model request
// per conversation, plus the per-agent settings operators change between calls
// and the agent's fixed identity key.
//
// An update shows the model the person's current facts under handles f1..fN
// and the transcript framed as inert data; the model answers a bounded JSON
// list of add/update/delete operations and a summary. Everything is validated
// before anything is written; then the changes and one call record are applied
// in one transaction guarded by a revision counter per (agent, person), so a
// stale update returns ErrConflict and an erasure can never be undone by an
// update that was already in flight.
//
//	svc := memory.NewService(memory.Config{Pool: pool, Models: registry, ...})
//	res, err := svc.Add(ctx, memory.AddRequest{AgentID: "support", UserID: "+34111111111",
//		Transcript: memory.Transcript{Messages: msgs}})
//	rec, err := svc.Recall(ctx, memory.RecallRequest{AgentID: "support", UserID: "+34111111111"})
package memory
