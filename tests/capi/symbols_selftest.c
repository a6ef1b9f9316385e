/* A library that breaks the export rules on purpose, to show check_symbols.cmake catches it. */
int rlock_selftest_ok(void);
int selftest_unprefixed_export(void);
int rlock_selftest_ok(void) { return 1; }
int selftest_unprefixed_export(void) { return 2; }
