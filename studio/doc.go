// Package studio is the operator console in the box, served at /studio: a
// page of plain JavaScript and CSS embedded in the binary, with nothing to
// build and nothing fetched from the internet.
//
// Studio has no back door. It signs in with an API key the operator types,
// keeps it in the tab's sessionStorage only (gone when the tab closes), and
// makes every request through the same /api routes, scopes and envelope as
// any client. It asks GET /api/keys/self which scopes its key holds and
// shows a screen read-only, with the reason, when one is missing.
//
// The page is served under a strict Content-Security-Policy: scripts and
// styles only from the box, no inline script, no eval, no frames. The
// scripts build the DOM with textContent and attributes only, never
// innerHTML, so nothing a caller said, a model wrote or an operator typed is
// ever parsed as markup.
//
//	studio.Register(apiServer) // GET /studio/... and GET / → /studio/
package studio
