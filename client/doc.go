// Package client is the Go client of the box's /api routes, the surface of
// @stackbone/sdk in Go: context first, the box's own types, errors that
// errors.Is the box's codes, and list iterators that page on their own.
//
//	c := client.New("http://127.0.0.1:4242", os.Getenv("STACKBONE_API_KEY"))
//	res, err := c.Memory.Add(ctx, "Caller: call me after 16:00.", client.MemoryAdd{AgentID: "support", UserID: "+34111111111"})
//	if errors.Is(err, client.ErrMemoryConflict) { ... }
//	for call, err := range c.Voice.Calls(ctx, client.CallQuery{Agent: "support"}) { ... }
//
// A 503 or 429 answer, and a request that got no answer (unless it is a
// POST without an Idempotency-Key), is retried after
// the box's Retry-After or with exponential backoff (Client.MaxRetries).
package client
