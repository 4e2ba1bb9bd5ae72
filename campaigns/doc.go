// Package campaigns is batch outbound calling: a campaign is an agent, a
// trunk, a list of contacts (a number, identities, variables the agent's
// instructions use as {name}), calling windows read in each contact's time
// zone, a cap on the calls up at once, and a retry policy per outcome.
//
// How an attempt happens, and why nothing is lost or called twice:
//
//   - Each box runs the scheduler (Service.Run). Under the campaign's row
//     lock it counts the contacts in flight (queued or calling), so the cap
//     holds across boxes, and claims due contacts that are inside their
//     window: each gets an attempt row whose id is the call's id, and a
//     River job naming that id, in the same transaction.
//
//   - The job (on any box) dials with the attempt's id under the attempt's
//     row lock. A job run again after its box died finds the call already
//     there (voice.ErrCallExists) and dials nothing.
//
//   - The call's end (voice.Config.Ended, in the transaction that records
//     it, for calls closed by another box as box_lost too), under the
//     campaign's row lock, records the outcome and decides the contact's next state: done, another attempt
//     after the policy's delay with jitter, or failed. When no contact is
//     left in flight or waiting the campaign is finished and
//     campaign.finished is recorded.
//
//     svc, err := campaigns.New(campaigns.Config{Pool: pool, Dial: dial, Trunks: trunks})
//     svc.AddWorkers(registry)
//     go svc.Run(ctx)
package campaigns
