import Testing

@testable import RaveRuntime

@Suite struct ConfigurationTests {
    @Test func defaultsFollowTheLocalRunTable() throws {
        let configuration = try ServiceConfiguration(serviceName: "identity", environment: [:], coreCount: 2)
        #expect(configuration.listen == SocketAddress(host: "127.0.0.1", port: 7501))
        #expect(configuration.adminListen == SocketAddress(host: "127.0.0.1", port: 9401))
        #expect(configuration.databaseURL == "postgresql://postgres@127.0.0.1:55432/rave_identity")
        #expect(configuration.databasePoolSize == 16)
        #expect(configuration.tlsCertificatePath == ".run/certs/identity.pem")
        #expect(configuration.tlsPrivateKeyPath == ".run/certs/identity-key.pem")
        #expect(configuration.tlsCertificateAuthorityPath == ".run/certs/ca.pem")
        #expect(configuration.requireClientCertificate)
        #expect(configuration.logLevel == .info)
        #expect(configuration.maxFrameSize == 4 << 20)
        #expect(configuration.eventLoopCount == 2)
        #expect(configuration.shutdownGracePeriod == .seconds(30))
    }

    @Test func gatewayHasNoDatabaseAndNoClientCertificates() throws {
        let configuration = try ServiceConfiguration(serviceName: "gateway", environment: [:])
        #expect(configuration.listen.port == 7443)
        #expect(configuration.adminListen.port == 9400)
        #expect(configuration.databaseURL == nil)
        #expect(!configuration.requireClientCertificate)
        #expect(!configuration.effectiveSettings.contains { $0.0 == "RAVE_DATABASE_URL" })
    }

    @Test func everyCatalogServiceHasItsOwnPortsAndDatabase() throws {
        let expected = [
            ("social", 7502, 9402), ("leaderboards", 7503, 9403), ("gifts", 7504, 9404), ("push", 7505, 9405),
            ("wallet", 7506, 9406),
        ]
        for (name, port, adminPort) in expected {
            let configuration = try ServiceConfiguration(serviceName: name, environment: [:])
            #expect(configuration.listen.port == port)
            #expect(configuration.adminListen.port == adminPort)
            #expect(configuration.databaseURL?.hasSuffix("/rave_\(name)") == true)
        }
    }

    @Test func environmentOverridesDefaults() throws {
        let environment = [
            "RAVE_LISTEN": "[::1]:8000", "RAVE_ADMIN_LISTEN": "0.0.0.0:0",
            "RAVE_DATABASE_URL": "postgresql://rave:secret@db.internal:5432/rave_social",
            "RAVE_DB_POOL_SIZE": "32", "RAVE_CERT_DIR": "/etc/rave", "RAVE_TLS_KEY": "/secrets/key.pem",
            "RAVE_LOG_LEVEL": "debug", "RAVE_MAX_FRAME_SIZE": "8MiB", "RAVE_EVENT_LOOPS": "4",
            "RAVE_SHUTDOWN_GRACE": "500ms", "RAVE_TLS_CLIENT_AUTH": "false", "RAVE_IDLE_TIMEOUT": "5m",
        ]
        let configuration = try ServiceConfiguration(serviceName: "social", environment: environment)
        #expect(configuration.listen == SocketAddress(host: "::1", port: 8000))
        #expect(configuration.listen.description == "[::1]:8000")
        #expect(configuration.adminListen == SocketAddress(host: "0.0.0.0", port: 0))
        #expect(configuration.databaseURL == "postgresql://rave:secret@db.internal:5432/rave_social")
        #expect(configuration.databasePoolSize == 32)
        #expect(configuration.tlsCertificatePath == "/etc/rave/social.pem")
        #expect(configuration.tlsPrivateKeyPath == "/secrets/key.pem")
        #expect(configuration.tlsCertificateAuthorityPath == "/etc/rave/ca.pem")
        #expect(configuration.logLevel == .debug)
        #expect(configuration.maxFrameSize == 8 << 20)
        #expect(configuration.eventLoopCount == 4)
        #expect(configuration.shutdownGracePeriod == .milliseconds(500))
        #expect(configuration.idleTimeout == .seconds(300))
        #expect(!configuration.requireClientCertificate)
    }

    @Test(arguments: [
        ("RAVE_DB_POOL_SIZE", "0", "1…1000"),
        ("RAVE_DB_POOL_SIZE", "many", "1…1000"),
        ("RAVE_LISTEN", "localhost", "host:port"),
        ("RAVE_ADMIN_LISTEN", "127.0.0.1:70000", "0…65535"),
        ("RAVE_LOG_LEVEL", "verbose", "trace, debug, info"),
        ("RAVE_MAX_FRAME_SIZE", "1GiB", "1024…67108864"),
        ("RAVE_MAX_FRAME_SIZE", "12 parsecs", "suffixes KiB, MiB, GiB"),
        ("RAVE_SHUTDOWN_GRACE", "-1s", "duration"),
        ("RAVE_TLS_CLIENT_AUTH", "maybe", "true or false"),
        ("RAVE_DATABASE_URL", "mysql://db/x", "postgresql:// URL"),
        ("RAVE_TLS_CERT", "", "non-empty"),
    ])
    func invalidValueStopsStartupNamingTheVariable(variable: String, value: String, allowed: String) {
        #expect {
            try ServiceConfiguration(serviceName: "wallet", environment: [variable: value])
        } throws: { error in
            guard let error = error as? RuntimeError else { return false }
            return error.kind == .invalidConfiguration && error.message.hasPrefix("\(variable) must be")
                && error.message.contains(allowed) && error.message.contains("\"\(value)\"")
        }
    }

    @Test func effectiveSettingsMaskThePassword() throws {
        let environment = ["RAVE_DATABASE_URL": "postgresql://rave:hunter2@127.0.0.1:55432/rave_push?sslmode=disable"]
        let configuration = try ServiceConfiguration(serviceName: "push", environment: environment)
        let shown = configuration.effectiveSettings.first { $0.0 == "RAVE_DATABASE_URL" }?.1
        #expect(shown == "postgresql://rave:****@127.0.0.1:55432/rave_push?sslmode=disable")
        #expect(!configuration.effectiveSettings.contains { $0.1.contains("hunter2") })
        #expect(configuration.effectiveSettings.contains { $0 == ("RAVE_LISTEN", "127.0.0.1:7505") })
    }

    @Test(arguments: [
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("postgres://user:pw@host:5432/db", "postgres://user:****@host:5432/db"),
        (
            "postgresql://host/db?user=a&password=pw&sslmode=require",
            "postgresql://host/db?user=a&password=****&sslmode=require"
        ),
        ("host=127.0.0.1 dbname=x password=pw user=u", "host=127.0.0.1 dbname=x password=**** user=u"),
        ("postgresql://u:p%40ss@h/db", "postgresql://u:****@h/db"),
    ])
    func connectionStringsAreMasked(input: String, shown: String) {
        #expect(ConfigurationReader.maskedConnectionString(input) == shown)
    }

    @Test func serviceSpecificSettingsUseTheSameReader() throws {
        var reader = ConfigurationReader(environment: ["RAVE_TOKEN_SECRET": "s3cr3t", "RAVE_PAGE_LIMIT": "1_000"])
        #expect(try reader.string("RAVE_TOKEN_SECRET", default: "dev", secret: true) == "s3cr3t")
        #expect(try reader.integer("RAVE_PAGE_LIMIT", default: 50, range: 1...5000) == 1000)
        #expect(
            try reader.duration("RAVE_TICK", default: .seconds(1), range: .zero...Duration.seconds(10)) == .seconds(1))
        #expect(reader.effectiveSettings.map(\.1) == ["****", "1000", "1s"])
    }
}
