import {
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  fromSeed,
} from '@nats-io/jwt';

/**
 * The NATS identities the controller signs (the reference's rules), with
 * `@nats-io/jwt`: a self-signed operator, the system account `SYS` it signs (unlimited, the two `$SYS`
 * monitoring exports, no JetStream limits), and users of that account. Keys travel as seeds.
 */

export interface SignedIdentity {
  publicKey: string;
  seed: string;
  jwt: string;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const seedOf = (key: { getSeed(): Uint8Array }) => text(key.getSeed());

export async function newOperator(name: string): Promise<SignedIdentity> {
  const key = createOperator();
  return { publicKey: key.getPublicKey(), seed: seedOf(key), jwt: await encodeOperator(name, key) };
}

const SYSTEM_EXPORTS = [
  {
    name: 'account-monitoring-streams',
    subject: '$SYS.ACCOUNT.*.>',
    type: 'stream',
    account_token_position: 3,
    description: 'Account specific monitoring stream',
    info_url: 'https://docs.nats.io/nats-server/configuration/sys_accounts',
  },
  {
    name: 'account-monitoring-services',
    subject: '$SYS.REQ.ACCOUNT.*.*',
    type: 'service',
    response_type: 'Stream',
    account_token_position: 4,
    description: 'Request account specific monitoring services for: SUBSZ, CONNZ, LEAFZ, JSZ and INFO',
    info_url: 'https://docs.nats.io/nats-server/configuration/sys_accounts',
  },
];

export async function newSystemAccount(operatorSeed: string): Promise<SignedIdentity> {
  const key = createAccount();
  const jwt = await encodeAccount(
    'SYS',
    key,
    {
      limits: {
        conn: -1,
        leaf: -1,
        data: -1,
        exports: -1,
        imports: -1,
        payload: -1,
        subs: -1,
        wildcards: true,
      },
      default_permissions: { pub: {}, sub: {} },
      description: 'Default system account rule',
      exports: SYSTEM_EXPORTS,
    } as never,
    { signer: fromSeed(new TextEncoder().encode(operatorSeed)) },
  );
  return { publicKey: key.getPublicKey(), seed: seedOf(key), jwt };
}

/** A user of an account: unlimited, connecting as a client or (for a leaf's system user) a leafnode. */
export async function newUser(
  name: string,
  accountSeed: string,
  connectionTypes: readonly string[],
): Promise<SignedIdentity & { creds: string }> {
  const key = createUser();
  const jwt = await encodeUser(name, key, fromSeed(new TextEncoder().encode(accountSeed)), {
    data: -1,
    payload: -1,
    subs: -1,
    allowed_connection_types: [...connectionTypes],
    pub: {},
    sub: {},
  } as never);
  return { publicKey: key.getPublicKey(), seed: seedOf(key), jwt, creds: text(fmtCreds(jwt, key)) };
}
