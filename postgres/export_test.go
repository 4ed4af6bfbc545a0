package postgres

// SetBeforeListen installs a hook that runs before each listener connection
// attempt (0 for the first). Call it before the first Subscribe.
func SetBeforeListen(p *Publisher, f func(attempt int)) { p.beforeListen = f }
