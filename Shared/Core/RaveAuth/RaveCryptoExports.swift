// This module's API is written in RaveCrypto's types (Ed25519 keys, CryptoError), so importing RaveAuth brings them
// along: a caller that verifies tokens needs nothing else.
@_exported import RaveCrypto
