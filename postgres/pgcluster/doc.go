// Package pgcluster runs a private PostgreSQL cluster from the machine's own
// PostgreSQL binaries, so the box (stackbone dev) and its tests need nothing
// but initdb and pg_ctl installed.
//
// A cluster lives in one directory, Config.Dir:
//
//	Dir/data/         the data directory (initdb output); its stackbone.conf,
//	                  rewritten on every start, holds port, listen address,
//	                  socket directory and the NoSync settings
//	Dir/server.log    the server's log (pg_ctl -l)
//	Dir/port          the port chosen when Config.Port is 0, reused on restart
//	Dir/start.lock    flock held while a process initialises or starts the cluster
//	Dir/.s.PGSQL.N    the unix socket (when the path fits the kernel's limit)
//
// Start initialises the directory on first use, starts the server (or reuses
// one already running from the same Dir, even if another process started it)
// and makes sure the database "stackbone" exists. The server listens on
// 127.0.0.1 only and trusts every local connection as superuser "postgres"
// (any user of the machine may connect): it is a development and test
// cluster, not a production one.
//
// When the process runs as root, initdb and the server run as the
// unprivileged user "postgres" (PostgreSQL refuses to run as root); Dir is
// handed to that user and every parent of Dir must be searchable by it.
//
//	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: ".stackbone/postgres", Logger: logger})
//	if err != nil {
//		return err
//	}
//	defer c.Stop(context.WithoutCancel(ctx))
//	pool, err := pgxpool.New(ctx, c.URL("stackbone"))
package pgcluster
