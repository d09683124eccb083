import RaveDynamic
import RaveGatewayRules
import Testing

/// The role table (`AdminRoles`): every admin method of Proto/ has a least role, so a new admin method cannot reach
/// operators unclassified, and the table names nothing else.
@Suite("Admin roles")
struct AdminRolesTests {
    static let adminMethods = DescriptorRegistry.shared.methods.keys.filter { MethodAccess(method: $0) == .admin }

    @Test func everyAdminMethodOfProtoHasALeastRole() {
        #expect(Self.adminMethods.count >= 37)
        let unclassified = Self.adminMethods.filter { AdminRoles.role(for: $0) == nil }.sorted()
        #expect(unclassified.isEmpty, "classify these in Shared/RPC/RaveGatewayRules/AdminRoles.swift: \(unclassified)")
    }

    @Test func theTableNamesOnlyAdminMethodsOfProto() {
        let stale = Set(AdminRoles.leastRole.keys).subtracting(Self.adminMethods).sorted()
        #expect(stale.isEmpty, "not admin methods of Proto/: \(stale)")
        #expect(AdminRoles.selfAudited.isSubset(of: Set(AdminRoles.leastRole.keys)))
    }

    /// Reads are viewer's, and nothing a viewer may call reads like a write.
    @Test func viewerMethodsOnlyRead() {
        for (method, role) in AdminRoles.leastRole {
            let name = method.split(separator: "/").last ?? ""
            let reads = ["Get", "List", "Find", "Search"].contains { name.hasPrefix($0) }
            if role == .viewer { #expect(reads, "\(method) is viewer's but does not read") }
            if reads && !AdminRoles.readsAboveViewer.contains(method) {
                #expect(role == .viewer, "\(method) reads but needs \(role)")
            }
            #expect(AdminRoles.isWrite(method) == (role != .viewer && !reads), "\(method)")
        }
    }

    @Test func rolesAreOrderedAndRefusalsNameTheRoleNeeded() {
        #expect(OperatorRole.allCases.sorted() == [.viewer, .support, .operator, .owner])
        #expect(AdminRoles.refusal(method: "rave.wallet.v1.WalletAdmin/Deposit", role: .operator) == nil)
        #expect(AdminRoles.refusal(method: "rave.wallet.v1.WalletAdmin/Deposit", role: .owner) == nil)
        #expect(
            AdminRoles.refusal(method: "rave.wallet.v1.WalletAdmin/Deposit", role: .support)
                == "rave.wallet.v1.WalletAdmin/Deposit needs the operator role operator or higher; this operator's "
                + "role is support")
        #expect(AdminRoles.refusal(method: "rave.wallet.v1.WalletAdmin/Nope", role: .owner) != nil)
    }

    @Test func operatorTokenScopesRoundTrip() {
        for role in OperatorRole.allCases {
            for publisher in [nil, String(repeating: "a", count: 32)] {
                let grant = OperatorToken.Grant(role: role, publisherID: publisher)
                #expect(OperatorToken.grant(fromScopes: OperatorToken.scopes(for: grant)) == grant)
            }
        }
        #expect(OperatorToken.grant(fromScopes: ["player"]) == nil)
        #expect(OperatorToken.grant(fromScopes: ["operator", "role:god", "publisher:*"]) == nil)
        #expect(OperatorToken.grant(fromScopes: ["operator", "role:owner", "role:viewer", "publisher:*"]) == nil)
    }
}
