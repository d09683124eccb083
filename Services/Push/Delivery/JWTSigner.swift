import Foundation
import RaveCrypto
import RaveHTTPClient

/// Signs JSON Web Tokens with a PEM private key: ES256 for APNs provider tokens, RS256 for Google's OAuth2
/// service-account assertions.
final class JWTSigner: Sendable {
    enum Algorithm: String, Sendable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    private enum Key: Sendable {
        case p256(P256PrivateKey)
        case rsa(RSAPrivateKey)
    }

    let algorithm: Algorithm
    private let key: Key

    init(privateKeyPEM: String, algorithm: Algorithm) throws(PushError) {
        do {
            switch algorithm {
            case .es256: key = .p256(try P256PrivateKey(pem: privateKeyPEM))
            case .rs256: key = .rsa(try RSAPrivateKey(pem: privateKeyPEM))
            }
        } catch {
            throw PushError(
                .configuration,
                "\(algorithm.rawValue) needs an \(algorithm == .es256 ? "EC P-256" : "RSA") PEM private key: "
                    + error.message)
        }
        self.algorithm = algorithm
    }

    /// `header.claims.signature`, each part base64url; `headerFields` are added to `alg` and `typ`.
    func token(headerFields: [(String, String)], claims: JSONObject) throws(PushError) -> String {
        var header = JSONObject()
        header.add("alg", algorithm.rawValue)
        header.add("typ", "JWT")
        for (name, value) in headerFields { header.add(name, value) }
        let signingInput = Self.base64URL(Array(header.text.utf8)) + "." + Self.base64URL(Array(claims.text.utf8))
        let message = Array(signingInput.utf8)
        let signature: [UInt8]
        do {
            switch key {
            case .p256(let key): signature = try key.signature(for: message)
            case .rsa(let key): signature = try key.signature(for: message)
            }
        } catch {
            throw PushError(.configuration, "\(algorithm.rawValue) signing failed: \(error.message)")
        }
        return signingInput + "." + Self.base64URL(signature)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

extension HTTP2Client {
    /// `post`, with no answer reported as the provider's failure.
    func send(_ request: HTTPRequest) async throws(PushError) -> HTTPResponse {
        do {
            return try await post(request)
        } catch {
            throw PushError(.provider, error.message)
        }
    }
}
