// Fixed PEM keys for the tests (made with `openssl genpkey`, never used anywhere else).
enum TestKeys {
    static let rsaPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCwJTKb++4H+xWo
        DXNxqlUdnivNpdVHCu7J++diOEyPYuH8ajiILacGoSFjKYMqnJEA05KrwKK3B584
        pvNdrtQuFPGbwqvWbtIfylsubGBArCMnmKRRcq4stPCeA5WBOxLaG7ERCWwT/zSK
        N4cjeqCZYTcguMQdOXVehSTFrQ0jqSz7dkjXKCuwf7nxLqNAONxAb2en1eN7letk
        gkDhlrfq5wIe0+QgUMvg8LY8Cu0fdvrw0N8ynBOJOTSSjPqeaYYwArHvkXA/kO46
        u5vQRrmBsKJbhHmzH+3UfAVO0GO7yoL6uOCTga1qOAXNzbBcy0ehQhJKrRyostfE
        8SSGwWejAgMBAAECggEAFWVHSvQkexqwDDwqCCX49cKHLpEUoW7+B1HOTrto7UfF
        DGx4lm35KlB7JjjeIlhnMpMAb1VUTmgiGncI+5mnUzufB1zzk3Xdlxf00GRAospl
        8MLVPsFvz6Vgzsi/qbVbult/vAKJerpWju1kwFX+WPMah6J5y9T1YThJ+arl/C02
        Br0oqtblrC8tKMzXPI6aMGurc48F188fvRL/E1sOm/bWFmWQHfWL8Ja0eUJs/xM3
        BJlLfTHkGIuwzbi2SM2vTUMzP+ALrynhDQVAdVpmb4MEUtVCxOQeIHJ1tcLf8rk1
        BtXP2AiHmiKi6knQ7DyaKskXfMGpUN1EgdhHm+2ZgQKBgQDudK9UKm1fNskVl0d0
        2/RV/ImHp7X8rdJC6J7/Fe7LWxIgNGIl/G+zSgoaZZlZ6mND3tBTHy2aMpPDmPA7
        3QEWI+exvlAY2ZuZOR5hhri+map36hvduYbIC6GJLVL4GWzVdBGzD4XZh0JdaOo+
        8VCqVMmZ7Gh0S3fodLpfLw55gQKBgQC9GuUC21d99Qf6AcF9bNfaHldNmzotr+fq
        Zy+c/IyS+50NnLITcMw+jG2wkK2r69xZzLz2cQBaWwK5A3fsUvGLFBSuYMbEKyuH
        XsS4J0ckHuN0p3sdBfeIdjPdfAOg3rT2/cpajxUh3cY88BzKnEuRuaQuaGzzRvlB
        L5yehS5LIwKBgAO/ZboG6K0kaUijlgXqJw7q5yZwplWQTcuraERODfC4P7Kt4BUE
        wKSqtznu+tgE7QZ2DAQia08PGG9sieoG8Stt6QhMG2ookV95HFcgDOtB8wHrdgCo
        F8wxEprbUYCAtcstBdIwnkPq8koRigzvMftbVcfLhWC+huXqX7t7O9kBAoGAfgRj
        ImE6z7QvCZqL72JOAYuAkDXmMjXr7Vev8gSWRQipoz2NqcjcQr5gBm6TXWMC51C5
        h9zL6GqHyPUXwIORdSX/lijlrCo8iqxLmZCLJvXyi3VkZHXqe6SRcYJIBLcEjyeW
        5nw9D+FzTn6QITDAZy73yvlJyWC9j4QD8ds8e1MCgYEAiEfD3jDnwM/7Zh1DUmCq
        RiNXXojWnxICdHVMl73/c89/YW2bEdtoc3fLgNIQN+64Nfn276FC3zufgtV3mr9p
        GyrotX2dU0k7Ydpm8TAYVFOj+YxFjZzTmH5eZH2SFzhzKgVqdPwZWfOnk9wobuMJ
        KS+enSF0GwWEhWTKglunsck=
        -----END PRIVATE KEY-----
        """
    static let p256PEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOU5Mkfsmux0DYEUc
        SMo42lhXwpvxDAYYWtTNM/X4rcChRANCAAQ9buvqK7j9BC+55xrM+sVKpdtiYfNw
        m3oB4pFIhOlYKTf+6rpZSosaehbkDhzMKTINo0NAGZNeIh8N+K8MOVht
        -----END PRIVATE KEY-----
        """
    static let p384PEM = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDCqhVBsyJxkIBNP/Ymp
        cqawQECltYwiyoQD8VpFRMBD0mUFVaeoifKvy33VnvFkNvGhZANiAASYPnxPAvYY
        uHEcHuMbh3JXDJpeoV6kzlD+BaXF56l+X+qEW7qoRFSVK01t2NTdqamhbD2qSNC2
        KmeOG48vCVY3YyGzBtr6EgYtxviMEflH5yPV5wxvky5kN/alpcgWU6k=
        -----END PRIVATE KEY-----
        """
}
