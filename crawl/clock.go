package crawl

import "drover/clock"

// Clock is the time source of a Fetcher (drover/clock's): the politeness
// delays, the robots.txt cache, Retry-After dates and fetch timings go
// through it, so that tests can drive time by hand.
type Clock = clock.Clock

// Timer is a timer of a Clock.
type Timer = clock.Timer

// SystemClock is the wall clock of the machine.
type SystemClock = clock.System
