import RaveTransport

/// `ravectl certs --out DIR`: a development CA and a key pair per service, for `make run` and tests.
enum CertsCommand {
    static let usage = "ravectl certs [--out .run/certs] [--names gateway,identity,…]"

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valueOptions: ["out", "names"])
        let directory = options.value("out") ?? ".run/certs"
        let names =
            options.value("names").map { $0.split(separator: ",").map(String.init) }
            ?? DevelopmentCertificates.projectNames
        try DevelopmentCertificates.write(to: directory, services: names)
        print("wrote ca.pem and \(names.count) key pairs to \(directory)")
        return 0
    }
}
