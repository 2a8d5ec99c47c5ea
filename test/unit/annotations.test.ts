import { describe, expect, it } from 'vitest';
import { tagsToAnnotations } from '../../shared/domain/annotations.js';

describe('tagsToAnnotations: seed table "Tags become Kubernetes annotations"', () => {
  // Tag in YAML | Annotation
  it.each<[string, Record<string, string>, string]>([
    ['checkout', { checkout: '' }, 'a tag with no colon is treated as checkout:'],
    [
      'service.beta.kubernetes.io/aws-load-balancer-type: nlb',
      { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' },
      'split on the first colon',
    ],
    ['a:b:c', { a: 'b' }, 'only the first colon is a separator; the rest is dropped'],
  ])('tag %j becomes %j (%s)', (tag, annotations) => {
    // Act / Assess
    expect(tagsToAnnotations([tag])).toStrictEqual(annotations);
  });

  it('copies the seed Kubernetes example tags onto the worked Service annotations', () => {
    // Prepare
    const tags = ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'];

    // Act
    const annotations = tagsToAnnotations(tags);

    // Assess
    expect(annotations).toStrictEqual({
      checkout: '',
      'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb',
    });
  });

  it('treats "checkout:" like "checkout"', () => {
    // Act / Assess
    expect(tagsToAnnotations(['checkout:'])).toStrictEqual(tagsToAnnotations(['checkout']));
  });

  it('builds the whole map from the tags alone, so an update with no tags has no annotations', () => {
    // Act / Assess
    expect(tagsToAnnotations([])).toStrictEqual({});
  });

  it('returns a new map for every call (an update replaces the whole annotation map)', () => {
    // Prepare
    const before = tagsToAnnotations(['checkout', 'team: orders']);

    // Act
    const after = tagsToAnnotations(['team: payments']);

    // Assess
    expect(after).toStrictEqual({ team: 'payments' });
    expect(before).toStrictEqual({ checkout: '', team: 'orders' });
  });
});
