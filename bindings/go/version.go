package rlock

/*
#include "shim.h"
*/
import "C"

// HeaderVersion is RLOCK_VERSION_NUMBER (major*10000 + minor*100 + patch) of the rlock.h this
// package was compiled against. shim.h refuses to compile against anything but 0.3.x.
const HeaderVersion = uint(C.RLOCK_VERSION_NUMBER)

// Version returns the version string of the rlock C library actually loaded.
func Version() string {
	return C.GoString(C.rlock_version_string())
}

// checkVersion accepts a loaded library with the same major version as the headers and at
// least their minor version: minors only add to the ABI, so an older one may lack a symbol or
// struct field this package uses.
func checkVersion(header, loaded uint) error {
	hMajor, hMinor := header/10000, header/100%100
	lMajor, lMinor := loaded/10000, loaded/100%100
	if lMajor != hMajor || lMinor < hMinor {
		return newError(CodeVersion,
			"the loaded rlock library is %d.%d.%d but this binding was built for %d.%d.x "+
				"(same major, minor %d or newer); point PKG_CONFIG_PATH and the library path "+
				"at the same rlock",
			lMajor, lMinor, loaded%100, hMajor, hMinor, hMinor)
	}
	return nil
}

func checkLoadedVersion() error {
	return checkVersion(HeaderVersion, uint(C.rlock_version_number()))
}
