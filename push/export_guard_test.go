package push

// ControlForTest runs the dialer Control func that g.Client uses, as the
// dialer would just before connecting to address ("ip:port").
func (g *Guard) ControlForTest(network, address string) error {
	rules, err := parseGuardAllow(g.Allow)
	if err != nil {
		return err
	}
	return guardControl(rules)(network, address, nil)
}
