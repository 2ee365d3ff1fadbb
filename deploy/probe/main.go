// Command svcbridge-probe is the container health check of the svcbridge
// image: the final image has no shell, curl or wget, so Docker's and
// Compose's HEALTHCHECK run this instead. It GETs one URL and exits 0 when
// the answer is 200 within the timeout, 1 otherwise (saying why on stderr).
//
//	svcbridge-probe http://127.0.0.1:8080/readyz
//
// Kubernetes needs none of this: its httpGet probes do the same natively.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: svcbridge-probe URL")
		os.Exit(2)
	}
	if err := probe(os.Args[1], 5*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "svcbridge-probe:", err)
		os.Exit(1)
	}
}

func probe(url string, timeout time.Duration) error {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, body)
	}
	return nil
}
