package proc

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// These tests are of the lookup itself: they choose what is hidden, whatever the
// environment of the test run says (the bare-machine pass hides everything).
func TestNeedFindsAndHides(t *testing.T) {
	t.Setenv(HideEnv, "")
	sh := Need{Program: "sh", Package: "dash"}
	p, err := sh.Find()
	require.NoError(t, err)
	require.FileExists(t, p)

	for _, tc := range []struct {
		hide   string
		hidden bool
	}{
		{"", false}, {"all", true}, {"sh", true}, {"dash", true}, {"redis-server, sh", true}, {"redis-server", false},
	} {
		t.Setenv(HideEnv, tc.hide)
		_, err := sh.Find()
		if !tc.hidden {
			require.NoError(t, err, tc.hide)
			require.Empty(t, Missing(sh))
			continue
		}
		require.ErrorIs(t, err, ErrNotFound, tc.hide)
		require.ErrorIs(t, err, ErrHidden, tc.hide)
		require.Equal(t, "sh not found (hidden by "+HideEnv+"): apt-get install dash", err.Error())
	}
}

func TestNeedMissingSaysHowToGetIt(t *testing.T) {
	t.Setenv(HideEnv, "")
	for _, tc := range []struct {
		need Need
		want string
	}{
		{Need{Program: "no-such-program-here", Package: "no-such-package"}, "no-such-program-here not found: apt-get install no-such-package"},
		{Need{File: "/nonexistent/*/libnothing.so.1", Package: "libnothing1"}, "libnothing.so.1 not found: apt-get install libnothing1"},
		{Need{Program: "kube-thing", Build: "build.sh", Lookup: func() string { return "" }}, "kube-thing not found: build it with build.sh"},
	} {
		_, err := tc.need.Find()
		require.ErrorIs(t, err, ErrNotFound)
		require.False(t, errors.Is(err, ErrHidden))
		require.Equal(t, tc.want, err.Error())
		require.Equal(t, tc.want, Missing(Need{Program: "sh"}, tc.need))
	}
	require.Equal(t, "apt-get install a b && build.sh", InstallLine(
		Need{Program: "no-such-a", Package: "a"}, Need{Program: "sh", Package: "dash"},
		Need{File: "/nonexistent/b", Package: "b"}, Need{Program: "no-such-a2", Package: "a"},
		Need{Program: "k", Build: "build.sh", Lookup: func() string { return "" }}))
}

// A glob finds a file whatever the machine's directory names are (the multiarch triplet).
func TestNeedFileGlob(t *testing.T) {
	t.Setenv(HideEnv, "")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(dir+"/x86_64-linux-gnu/faketime", 0o755))
	require.NoError(t, os.WriteFile(dir+"/x86_64-linux-gnu/faketime/lib.so.1", nil, 0o644))
	p, err := Need{File: dir + "/*/faketime/lib.so.1"}.Find()
	require.NoError(t, err)
	require.Equal(t, dir+"/x86_64-linux-gnu/faketime/lib.so.1", p)
}

// A program started by path is the user's, not an optional package: only naming it hides
// it; a Need is hidden by "all" too.
func TestStartHonoursHide(t *testing.T) {
	t.Setenv(HideEnv, "all")
	_, err := Start(t.Context(), Config{Need: Need{Program: "sh", Package: "dash"}, Args: []string{"-c", "true"}})
	require.ErrorIs(t, err, ErrHidden)
	p, err := Start(t.Context(), Config{Path: "sh", Args: []string{"-c", "true"}})
	require.NoError(t, err)
	<-p.Done()
	t.Setenv(HideEnv, "sh")
	_, err = Start(t.Context(), Config{Path: "sh", Args: []string{"-c", "true"}})
	require.ErrorIs(t, err, ErrHidden)
}
