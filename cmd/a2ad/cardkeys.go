package main

import (
	"fmt"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/agentcard/cardsign"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// loadCardSigner reads the --card-signing-key files into a signer whose
// jku is the JWKS on the main listener; nil without the flag.
func (m *Main) loadCardSigner() (*cardsign.Signer, error) {
	if len(m.Config.CardSigningKeys) == 0 {
		return nil, nil
	}
	keys, err := cardsign.LoadKeys(m.Config.CardSigningKeys)
	if err != nil {
		return nil, err
	}
	return cardsign.New(keys, m.baseURL+jsonrpc.CardKeysPath)
}

// openCardSigner puts the card signing keys in force; a key file that
// cannot be used stops the start.
func (m *Main) openCardSigner() error {
	s, err := m.loadCardSigner()
	if err != nil {
		return err
	}
	if s != nil {
		m.cardSigner.Store(s)
		m.Logger.Info().Strs("kids", s.KeyIDs()).Msg("agent card signed")
	}
	return nil
}

// reloadCardKeys reads the key files again. A file with a problem keeps
// the keys in force; new keys rebuild every card.
func (m *Main) reloadCardKeys(r *admin.ReloadReport) error {
	if len(m.Config.CardSigningKeys) == 0 {
		return nil
	}
	r.CardKeys = &admin.CardKeysReload{Problems: []string{}}
	s, err := m.loadCardSigner()
	if err != nil {
		r.CardKeys.Problems = append(r.CardKeys.Problems, err.Error())
		m.Logger.Error().Err(err).Msg("card signing keys not reloaded: the keys in force stay")
		if cur := m.cardSigner.Load(); cur != nil {
			r.CardKeys.KeyIDs = cur.KeyIDs()
		}
		return fmt.Errorf("reload card signing keys: %w", err)
	}
	m.cardSigner.Store(s)
	m.cards.Reset()
	r.CardKeys.Reloaded = true
	r.CardKeys.KeyIDs = s.KeyIDs()
	m.Logger.Info().Strs("kids", s.KeyIDs()).Msg("card signing keys reloaded")
	return nil
}

// cardKeys is the JWKS of the keys in force; nil when the card is not
// signed.
func (m *Main) cardKeys() []byte {
	if s := m.cardSigner.Load(); s != nil {
		return s.JWKS()
	}
	return nil
}
